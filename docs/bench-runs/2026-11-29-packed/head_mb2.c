// microbenchmark: the Q8_0 head product (262144 x 640) at nc columns, tile v4 (the patch) vs v5 variants
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include <time.h>
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;
static float table[65536];
static inline float hsum_float_8(const __m256 x) {
    __m128 res = _mm256_extractf128_ps(x, 1);
    res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    res = _mm_add_ss(res, _mm_movehdup_ps(res));
    return _mm_cvtss_f32(res);
}
static void vec_dot(int n, float *s, const block_q8_0 *x, const block_q8_0 *y) {
    int nb = n / 32; __m256 acc = _mm256_setzero_ps();
    for (int ib = 0; ib < nb; ++ib) {
        const __m256 d = _mm256_set1_ps(table[x[ib].d] * table[y[ib].d]);
        __m256i qx = _mm256_loadu_si256((const __m256i *)x[ib].qs);
        __m256i qy = _mm256_loadu_si256((const __m256i *)y[ib].qs);
        const __m256i ax = _mm256_sign_epi8(qx, qx), sy = _mm256_sign_epi8(qy, qx);
        const __m256 q = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy));
        acc = _mm256_fmadd_ps(d, q, acc);
    }
    *s = hsum_float_8(acc);
}
#define PF 16
// v4: as in the patch
static inline __attribute__((always_inline)) void tile_v4(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *vy, size_t by) {
    __m256 acc[4][4];
    for (int r = 0; r < NR; ++r) for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    const __m256i bias = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    for (int ib = 0; ib < nb; ++ib) {
        __m256i xu[4]; __m256 dx[4];
        for (int r = 0; r < NR; ++r) {
            const block_q8_0 *xb = (const block_q8_0 *)(vx + r*bx) + ib;
            _mm_prefetch((const char *)xb + PF*bx, _MM_HINT_T0);
            dx[r] = _mm256_broadcast_ss(&table[xb->d]);
            xu[r] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)xb->qs), bias);
        }
        for (int c = 0; c < NC; ++c) {
            const block_q8_0 *yb = (const block_q8_0 *)(vy + c*by) + ib;
            const __m256 dy = _mm256_broadcast_ss(&table[yb->d]);
            const __m256i qy = _mm256_loadu_si256((const __m256i *)yb->qs);
            const __m256i off = _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, bias, qy));
            for (int r = 0; r < NR; ++r) {
                const __m256 q = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(off, xu[r], qy));
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx[r], dy), q, acc[r][c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) for (int r = 0; r < NR; ++r) s[c*bs + r] = hsum_float_8(acc[r][c]);
}
// v5: the scale products d = x.d * y.d formed 4 rows at a time in 128-bit lanes, stored, and broadcast from
// memory into the FMA (a load, no vector ALU op): per (row, column, block) dpbusd + convert + fma.
static inline __attribute__((always_inline)) void tile_v5(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *vy, size_t by) {
    __m256 acc[4][4];
    for (int r = 0; r < NR; ++r) for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    const __m256i bias = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    float prod[4][4] __attribute__((aligned(16)));
    for (int ib = 0; ib < nb; ++ib) {
        __m256i xu[4]; float dxs[4] = {0, 0, 0, 0};
        for (int r = 0; r < NR; ++r) {
            const block_q8_0 *xb = (const block_q8_0 *)(vx + r*bx) + ib;
            _mm_prefetch((const char *)xb + PF*bx, _MM_HINT_T0);
            dxs[r] = table[xb->d];
            xu[r] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)xb->qs), bias);
        }
        const __m128 dxv = _mm_loadu_ps(dxs);
        for (int c = 0; c < NC; ++c) {
            const block_q8_0 *yb = (const block_q8_0 *)(vy + c*by) + ib;
            _mm_store_ps(prod[c], _mm_mul_ps(dxv, _mm_broadcast_ss(&table[yb->d])));
            const __m256i qy = _mm256_loadu_si256((const __m256i *)yb->qs);
            const __m256i off = _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, bias, qy));
            for (int r = 0; r < NR; ++r) {
                const __m256 q = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(off, xu[r], qy));
                acc[r][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&prod[c][r]), q, acc[r][c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) for (int r = 0; r < NR; ++r) s[c*bs + r] = hsum_float_8(acc[r][c]);
}
typedef void (*tile_fn)(int, float *, size_t, const char *, size_t, const char *, size_t, int, int);
#define DISPATCH(NAME, F) static void NAME(int n, float *s, size_t bs, const char *vx, size_t bx, const char *vy, size_t by, int nr, int nc) { \
    int nb = n / 32; switch (nr*8+nc) { \
    case 1*8+1: F(1,1,nb,s,bs,vx,bx,vy,by); break; case 1*8+2: F(1,2,nb,s,bs,vx,bx,vy,by); break; case 1*8+3: F(1,3,nb,s,bs,vx,bx,vy,by); break; case 1*8+4: F(1,4,nb,s,bs,vx,bx,vy,by); break; \
    case 2*8+1: F(2,1,nb,s,bs,vx,bx,vy,by); break; case 2*8+2: F(2,2,nb,s,bs,vx,bx,vy,by); break; case 2*8+3: F(2,3,nb,s,bs,vx,bx,vy,by); break; case 2*8+4: F(2,4,nb,s,bs,vx,bx,vy,by); break; \
    case 3*8+1: F(3,1,nb,s,bs,vx,bx,vy,by); break; case 3*8+2: F(3,2,nb,s,bs,vx,bx,vy,by); break; case 3*8+3: F(3,3,nb,s,bs,vx,bx,vy,by); break; case 3*8+4: F(3,4,nb,s,bs,vx,bx,vy,by); break; \
    case 4*8+1: F(4,1,nb,s,bs,vx,bx,vy,by); break; case 4*8+2: F(4,2,nb,s,bs,vx,bx,vy,by); break; case 4*8+3: F(4,3,nb,s,bs,vx,bx,vy,by); break; case 4*8+4: F(4,4,nb,s,bs,vx,bx,vy,by); break; } }
DISPATCH(t4, tile_v4)
// DISPATCH(t5, tile_v5)

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


static void product(tile_fn tile, int n, long rows, const char *w, size_t bx, const char *y, size_t by, int nc, float *dst) {
    long chunk = 256; long nchunks = (rows + chunk - 1) / chunk;
    #pragma omp parallel for schedule(static)
    for (long ch = 0; ch < nchunks; ++ch) {
        float tmp[4][16];
        long r0 = ch*chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (long ii = r0; ii < r1; ii += 16) {
            long ie = ii + 16 < r1 ? ii + 16 : r1;
            for (int c0 = 0; c0 < nc; c0 += 4) {
                int ncc = nc - c0 < 4 ? nc - c0 : 4;
                for (long ir = ii; ir < ie; ir += 4) {
                    int nr = ie - ir < 4 ? (int)(ie - ir) : 4;
                    tile(n, &tmp[0][ir - ii], 16, w + ir*bx, bx, y + c0*by, by, nr, ncc);
                }
                for (int c = 0; c < ncc; ++c) memcpy(dst + (long)(c0 + c)*rows + ii, tmp[c], (ie - ii)*sizeof(float));
            }
        }
    }
}

#define PK 192
// v12: tiles of 4 rows x up to 8 columns (4 pairs), the columns' part (qy pair, offset, dy pair) packed once per chunk
static inline __attribute__((always_inline)) void tile_v12(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *pack, int npk) {
    const int NP = (NC + 1) / 2;
    __m512 acc[4][4];
    for (int r = 0; r < NR; ++r) for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int ib = 0; ib < nb; ++ib) {
        __m512i xu[4]; __m512 dx[4];
        for (int r = 0; r < NR; ++r) {
            const block_q8_0 *xb = (const block_q8_0 *)(vx + r*bx) + ib;
            _mm_prefetch((const char *)xb + PF*bx, _MM_HINT_T0);
            dx[r] = _mm512_set1_ps(table[xb->d]);
            xu[r] = _mm512_xor_si512(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)xb->qs)), bias);
        }
        const char *pk = pack + (size_t)ib*npk*PK;
        for (int p = 0; p < NP; ++p) {
            const __m512i qy = _mm512_load_si512((const void *)(pk + p*PK));
            const __m512i off = _mm512_load_si512((const void *)(pk + p*PK + 64));
            const __m512 dy = _mm512_load_ps((const void *)(pk + p*PK + 128));
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
static void pack_cols(int nb, const char *vy, size_t by, int nc, char *pack, int npk) {
    const __m512i bias = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    for (int ib = 0; ib < nb; ++ib) for (int p = 0; p < (nc + 1)/2; ++p) {
        const int c0 = 2*p, c1 = 2*p + 1 < nc ? 2*p + 1 : 2*p;
        const block_q8_0 *y0 = (const block_q8_0 *)(vy + c0*by) + ib;
        const block_q8_0 *y1 = (const block_q8_0 *)(vy + c1*by) + ib;
        const __m512i qy = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y0->qs)),
                                              _mm256_loadu_si256((const __m256i *)y1->qs), 1);
        const __m512 dy = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_broadcast_ss(&table[y0->d])),
                                             _mm256_broadcast_ss(&table[y1->d]), 1);
        char *pk = pack + ((size_t)ib*npk + p)*PK;
        _mm512_store_si512((void *)pk, qy);
        _mm512_store_si512((void *)(pk + 64), _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, bias, qy)));
        _mm512_store_ps((void *)(pk + 128), dy);
    }
}
#define D12(R, C) case R*16+C: tile_v12(R, C, nb, s, bs, vx, bx, pack, npk); break;
#define D12R(R) D12(R,1) D12(R,2) D12(R,3) D12(R,4) D12(R,5) D12(R,6) D12(R,7) D12(R,8)
static void t12(int n, float *s, size_t bs, const char *vx, size_t bx, const char *pack, int npk, int nr, int nc) {
    int nb = n/32; switch (nr*16+nc) { D12R(1) D12R(2) D12R(3) D12R(4) }
}
static void product12(int n, long rows, const char *w, size_t bx, const char *y, size_t by, int nc, float *dst) {
    long chunk = 256; long nchunks = (rows + chunk - 1) / chunk; int nb = n/32;
    int npk = (nc + 1)/2;
    #pragma omp parallel
    {
    char *pack = aligned_alloc(64, (size_t)nb*npk*PK);
    #pragma omp for schedule(static)
    for (long ch = 0; ch < nchunks; ++ch) {
        float tmp[8][16];
        pack_cols(nb, y, by, nc, pack, npk);
        long r0 = ch*chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (long ii = r0; ii < r1; ii += 16) {
            long ie = ii + 16 < r1 ? ii + 16 : r1;
            for (int c0 = 0; c0 < nc; c0 += 8) {
                int ncc = nc - c0 < 8 ? nc - c0 : 8;
                for (long ir = ii; ir < ie; ir += 4) {
                    int nr = ie - ir < 4 ? (int)(ie - ir) : 4;
                    t12(n, &tmp[0][ir - ii], 16, w + ir*bx, bx, pack + (c0/2)*PK, npk, nr, ncc);
                }
                for (int c = 0; c < ncc; ++c) memcpy(dst + (long)(c0 + c)*rows + ii, tmp[c], (ie - ii)*sizeof(float));
            }
        }
    }
    free(pack);
    }
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9*t.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    const int n = 640; const long rows = argc > 1 ? atol(argv[1]) : 262144; const int reps = 15;
    for (int i = 0; i < 65536; ++i) table[i] = _cvtsh_ss((unsigned short)i);
    const size_t bx = (n/32)*sizeof(block_q8_0);
    char *w = aligned_alloc(64, (rows*bx + 63)/64*64); char *y = aligned_alloc(64, 32*bx);
    srand(1);
    for (long i = 0; i < rows*(n/32); ++i) { block_q8_0 *b = (block_q8_0*)w + i; b->d = _cvtss_sh(0.001f + (rand() % 1000)*1e-5f, 0); for (int j = 0; j < 32; ++j) b->qs[j] = (int8_t)(rand() % 255 - 127); }
    for (long i = 0; i < 32*(n/32); ++i) { block_q8_0 *b = (block_q8_0*)y + i; b->d = _cvtss_sh(0.01f + (rand() % 1000)*1e-4f, 0); for (int j = 0; j < 32; ++j) b->qs[j] = (int8_t)(rand() % 255 - 127); }
    float *ref = malloc(32*rows*sizeof(float)), *out = malloc(32*rows*sizeof(float));
    for (int c = 0; c < 32; ++c) for (long r = 0; r < rows; ++r) vec_dot(n, ref + c*rows + r, (const block_q8_0*)(w + r*bx), (const block_q8_0*)(y + c*bx));
    struct { const char *name; tile_fn f; } vs[] = { {"v11", t11}, {"v12", 0} };
    int nv = sizeof(vs)/sizeof(vs[0]);
    int ncs[] = {1, 2, 4, 8, 16, 32};
    for (int k = 0; k < 6; ++k) {
        int nc = ncs[k]; double med[16];
        double t[16][reps];
        for (int rep = 0; rep < reps; ++rep) for (int v = 0; v < nv; ++v) {
            double t0 = now(); if (vs[v].f) product(vs[v].f, n, rows, w, bx, y, bx, nc, out); else product12(n, rows, w, bx, y, bx, nc, out); t[v][rep] = now() - t0;
            if (rep == 0 && memcmp(out, ref, nc*rows*sizeof(float)) != 0) { printf("MISMATCH %s nc=%d\n", vs[v].name, nc); }
        }
        printf("nc=%2d", nc);
        for (int v = 0; v < nv; ++v) { qsort(t[v], reps, sizeof(double), cmpd); med[v] = t[v][reps/2]; printf("  %s %7.3f ms", vs[v].name, 1e3*med[v]); }
        printf("\n");
    }
    return 0;
}
