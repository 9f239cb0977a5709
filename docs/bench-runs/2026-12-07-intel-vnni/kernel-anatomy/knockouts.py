"""Writes a knock-out variant of the development tree's repack.cpp (llama.cpp with simul-exact/5 applied; the
unmodified file copied to /tmp/repack.orig first): `python knockouts.py scales,unpack,prefetch,tail` takes the
named parts out of the repacked Q4_K column kernel for every super-block but the first (tail: the per-column
float steps become one add), then the tree is built and its libggml-cpu timed by tools/column_kernels.py.
For timing only: the outputs are wrong by design."""
import sys
kos=sys.argv[1].split(',')
s=open('/tmp/repack.orig').read()
if 'scales' in kos:
    s=s.replace('            simul_q4k_scales(bp, w.scale, w.mins);\n            const __m256 col_d','            if (x == 0 && b == 0) simul_q4k_scales(bp, w.scale, w.mins);\n            const __m256 col_d',1)
if 'unpack' in kos:
    s=s.replace('''            for (int sb = 0; sb < QK_K / 64; sb++) {
                simul_q4k_quants(bp, sb, w.q[sb]);
            }''','''            if (x == 0 && b == 0) for (int sb = 0; sb < QK_K / 64; sb++) {
                simul_q4k_quants(bp, sb, w.q[sb]);
            }''',1)
if 'prefetch' in kos:
    s=s.replace('                _mm_prefetch(pf + l, _MM_HINT_T0);\n','                (void) pf;\n',1)
if 'tail' in kos:
    a=s.index('    for (int j = 0; j < CN; j++) {\n        // row r: dwords 2r and 2r + 1')
    b=s.index('    }\n}\n',a)
    s=s[:a]+'''    for (int j = 0; j < CN; j++) {
        acc[c0 + j][0] = _mm256_add_ps(acc[c0 + j][0], _mm256_castsi256_ps(_mm512_castsi512_si256(iacc[j])));
'''+s[b:]
open('/work/dev/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml/src/ggml-cpu/arch/x86/repack.cpp','w').write(s)
