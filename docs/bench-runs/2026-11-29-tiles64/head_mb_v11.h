static int g_gen;
// v11: the v4 tile with two columns side by side in one 512-bit register (lower half column c, upper half
// column c + 1): every lane's dpbusd, convert, scale product and FMA are vec_dot's, in the same order, so each
// half is bit-equal to the 256-bit chain; what changes is the instruction count (one 512-bit op where v4 has
// two 256-bit ones), which matters if the tile is bound by dispatch rather than by the FP pipes.
static inline __attribute__((always_inline)) void tile_v11(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *vy, size_t by) {
    const int NP = (NC + 1) / 2;
    __m512 acc[4][2];
    for (int r = 0; r < NR; ++r) for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
    const __m512i bias = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    for (int ib = 0; ib < nb; ++ib) {
        __m512i xu[4]; __m512 dx[4];
        for (int r = 0; r < NR; ++r) {
            const block_q8_0 *xb = (const block_q8_0 *)(vx + r*bx) + ib;
            _mm_prefetch((const char *)xb + PF*bx, _MM_HINT_T0);
            dx[r] = _mm512_set1_ps(table[xb->d]);
            xu[r] = _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xb->qs)), bias);
        }
        for (int p = 0; p < NP; ++p) {
            const int c0 = 2*p, c1 = 2*p + 1 < NC ? 2*p + 1 : 2*p;
            const block_q8_0 *y0 = (const block_q8_0 *)(vy + c0*by) + ib;
            const block_q8_0 *y1 = (const block_q8_0 *)(vy + c1*by) + ib;
            const __m512i qy = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y0->qs)),
                                                  _mm256_loadu_si256((const __m256i *)y1->qs), 1);
            const __m512 dy = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_broadcast_ss(&table[y0->d])),
                                                 _mm256_broadcast_ss(&table[y1->d]), 1);
            const __m512i off = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, qy));
            for (int r = 0; r < NR; ++r) {
                const __m512 q = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(off, xu[r], qy));
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dx[r], dy), q, acc[r][p]);
            }
        }
    }
    for (int p = 0; p < NP; ++p) {
        const int c0 = 2*p, c1 = 2*p + 1;
        for (int r = 0; r < NR; ++r) {
            s[c0*bs + r] = hsum_float_8(_mm512_castps512_ps256(acc[r][p]));
            if (c1 < NC) s[c1*bs + r] = hsum_float_8(_mm512_extractf32x8_ps(acc[r][p], 1));
        }
    }
}
DISPATCH(t11, tile_v11)
#define VARIANTS , {"v11", t11}
