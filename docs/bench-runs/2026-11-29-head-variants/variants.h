static int g_gen;
static __thread int tl_gen = -1; static __thread const char *tl_vy; static __thread int tl_nc;
static __thread __m256i tl_off[4][32];
// v9: v4 with each column's offset prepared once per product and column group
static inline __attribute__((always_inline)) void tile_v9(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *vy, size_t by) {
    const __m256i bias = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    if (tl_gen != g_gen || tl_vy != vy || tl_nc != NC) {
        for (int c = 0; c < NC; ++c) for (int ib = 0; ib < nb; ++ib) {
            const block_q8_0 *yb = (const block_q8_0 *)(vy + c*by) + ib;
            tl_off[c][ib] = _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, bias, _mm256_loadu_si256((const __m256i *)yb->qs)));
        }
        tl_gen = g_gen; tl_vy = vy; tl_nc = NC;
    }
    __m256 acc[4][4];
    for (int r = 0; r < NR; ++r) for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
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
            const __m256i off = tl_off[c][ib];
            for (int r = 0; r < NR; ++r) {
                const __m256 q = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(off, xu[r], qy));
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx[r], dy), q, acc[r][c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) for (int r = 0; r < NR; ++r) s[c*bs + r] = hsum_float_8(acc[r][c]);
}
// v10: rows 0-1 by dpbusd, rows 2-3 by vec_dot's sign trick (maddubs + madd): other execution ports
static inline __attribute__((always_inline)) void tile_v10(const int NR, const int NC, int nb, float *s, size_t bs,
        const char *vx, size_t bx, const char *vy, size_t by) {
    __m256 acc[4][4];
    for (int r = 0; r < NR; ++r) for (int c = 0; c < NC; ++c) acc[r][c] = _mm256_setzero_ps();
    const __m256i bias = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1);
    for (int ib = 0; ib < nb; ++ib) {
        __m256i xu[4]; __m256 dx[4]; __m256i xs[4];
        for (int r = 0; r < NR; ++r) {
            const block_q8_0 *xb = (const block_q8_0 *)(vx + r*bx) + ib;
            _mm_prefetch((const char *)xb + PF*bx, _MM_HINT_T0);
            dx[r] = _mm256_broadcast_ss(&table[xb->d]);
            const __m256i x = _mm256_loadu_si256((const __m256i *)xb->qs);
            if (r < 2) xu[r] = _mm256_xor_si256(x, bias); else { xs[r] = x; xu[r] = _mm256_sign_epi8(x, x); }
        }
        for (int c = 0; c < NC; ++c) {
            const block_q8_0 *yb = (const block_q8_0 *)(vy + c*by) + ib;
            const __m256 dy = _mm256_broadcast_ss(&table[yb->d]);
            const __m256i qy = _mm256_loadu_si256((const __m256i *)yb->qs);
            const __m256i off = NR > 0 ? _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, bias, qy)) : zero;
            for (int r = 0; r < NR; ++r) {
                __m256i qi;
                if (r < 2) qi = _mm256_dpbusd_epi32(off, xu[r], qy);
                else qi = _mm256_madd_epi16(_mm256_maddubs_epi16(xu[r], _mm256_sign_epi8(qy, xs[r])), ones);
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx[r], dy), _mm256_cvtepi32_ps(qi), acc[r][c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) for (int r = 0; r < NR; ++r) s[c*bs + r] = hsum_float_8(acc[r][c]);
}
DISPATCH(t9, tile_v9)
DISPATCH(t10, tile_v10)
#define VARIANTS , {"v9", t9}, {"v10", t10}
