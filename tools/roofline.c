// The roofline of this CPU for a forward pass of a quantized model: how fast the weights can be read (the
// bytes per second of a pass bound by its reads) and how fast the integer products that the quantized kernels
// use can run (the multiply-adds per second of a pass bound by its arithmetic), on 1 and on all threads.
//
//   gcc -O2 -march=native -fopenmp tools/roofline.c -o /tmp/roofline && /tmp/roofline [MiB] [repeats]
//
// Read: each thread sums its share of one buffer (default 1024 MiB, larger than any L3 it runs on) with
// 512-bit (or 256-bit) loads; the best of the repeats. Arithmetic: each thread runs independent chains of one
// instruction (12 accumulators, more than its latency times its throughput on the CPUs this was tried on) on
// register operands; a VNNI dpbusd or a maddubs counts as 64 (512-bit) or 32 (256-bit) 8-bit multiply-adds.
// dpbusd once more with its signed operand broadcast from memory for every instruction, as the exact Q4_K
// column kernel's 8-row form issues it (below 5 columns; tools/column_kernels.py times that kernel).
// The best of the repeats again: the figures are what the machine allows, for comparing a kernel with.
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Sum of the buffer's 64-bit words, so that the loads cannot be dropped
static uint64_t read_share(const uint8_t * p, size_t bytes) {
#if defined(__AVX512F__)
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 256 <= bytes; i += 256) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *) (p + i)));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *) (p + i + 64)));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *) (p + i + 128)));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *) (p + i + 192)));
    }
    return _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
#else
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 128 <= bytes; i += 128) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *) (p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *) (p + i + 32)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *) (p + i + 64)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *) (p + i + 96)));
    }
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *) out, _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
    return out[0] + out[1] + out[2] + out[3];
#endif
}

static double read_rate(const uint8_t * buf, size_t bytes, int threads, int repeats) {
    double best = 1e30;
    volatile uint64_t sink = 0;
    for (int r = 0; r < repeats; r++) {
        uint64_t total = 0;
        double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            const int t = omp_get_thread_num();
            const size_t share = bytes / threads / 256 * 256;
#pragma omp barrier
#pragma omp single
            t0 = now();
            total += read_share(buf + t * share, share);
#pragma omp barrier
#pragma omp single
            t1 = now();
        }
        sink += total;
        if (t1 - t0 < best) {
            best = t1 - t0;
        }
    }
    (void) sink;
    return bytes / best / 1e9;
}

#define CHAINS 12
#define ITERS 240000000L

// 8-byte activations for an operation that takes its operand from memory (2 KiB: in L1)
static int8_t roofline_act[2048] __attribute__((aligned(64)));

// twelve independent chains acc = op(acc, u, v, k) (k: the chain, 0..11), in named variables so that they stay
// in registers; operations per second over all threads. p moves through roofline_act every iteration, for an
// operation that reads its operand from memory; the others leave it unused.
#define ARITH(NAME, TYPE, SET, OP)                                                                    \
    static double NAME(int threads, int repeats) {                                                    \
        double best = 1e30;                                                                           \
        volatile int sink = 0;                                                                        \
        for (int r = 0; r < repeats; r++) {                                                           \
            double t0 = 0, t1 = 0;                                                                    \
            int total = 0;                                                                            \
            _Pragma("omp parallel num_threads(threads) reduction(+ : total)") {                       \
                const int t = omp_get_thread_num();                                                   \
                TYPE a0 = SET(t + 0), a1 = SET(t + 1), a2 = SET(t + 2), a3 = SET(t + 3);              \
                TYPE a4 = SET(t + 4), a5 = SET(t + 5), a6 = SET(t + 6), a7 = SET(t + 7);              \
                TYPE a8 = SET(t + 8), a9 = SET(t + 9), a10 = SET(t + 10), a11 = SET(t + 11);          \
                TYPE u = SET(3), v = SET(5);                                                          \
                const int8_t * base = roofline_act, * p = base;                                       \
                __asm__ volatile("" : "+r"(base)); /* its contents unknown to the compiler */          \
                __asm__ volatile("" : "+v"(u), "+v"(v));                                              \
                _Pragma("omp barrier") _Pragma("omp single") t0 = now();                              \
                for (long i = 0; i < ITERS / CHAINS; i++) {                                           \
                    p = base + ((i * 96) & 1920);                                                     \
                    a0 = OP(a0, u, v, 0); a1 = OP(a1, u, v, 1); a2 = OP(a2, u, v, 2);                 \
                    a3 = OP(a3, u, v, 3); a4 = OP(a4, u, v, 4); a5 = OP(a5, u, v, 5);                 \
                    a6 = OP(a6, u, v, 6); a7 = OP(a7, u, v, 7); a8 = OP(a8, u, v, 8);                 \
                    a9 = OP(a9, u, v, 9); a10 = OP(a10, u, v, 10); a11 = OP(a11, u, v, 11);           \
                    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5)); \
                    __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11)); \
                }                                                                                     \
                _Pragma("omp barrier") _Pragma("omp single") t1 = now();                              \
                a0 = OP(a0, a1, a2, 0); a3 = OP(a3, a4, a5, 1); a6 = OP(a6, a7, a8, 2);               \
                a9 = OP(a9, a10, a11, 3); a0 = OP(OP(a0, a3, a6, 4), a9, a0, 5);                      \
                (void) p;                                                                             \
                int x[16];                                                                            \
                memcpy(x, &a0, sizeof(int) * 4);                                                      \
                total += x[0];                                                                        \
            }                                                                                         \
            sink += total;                                                                            \
            if (t1 - t0 < best) best = t1 - t0;                                                       \
        }                                                                                             \
        (void) sink;                                                                                  \
        return (double) (ITERS / CHAINS) * CHAINS * threads / best / 1e9;                            \
    }

// one dependent chain of scalar adds per thread: one a cycle, so about the clock rate
static double clock_rate(int threads, int repeats) {
    double best = 1e30;
    volatile long sink = 0;
    for (int r = 0; r < repeats; r++) {
        double t0 = 0, t1 = 0;
        long total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            long x = omp_get_thread_num();
#pragma omp barrier
#pragma omp single
            t0 = now();
            for (long i = 0; i < ITERS; i++) {
                __asm__ volatile("add $1, %0" : "+r"(x));
            }
#pragma omp barrier
#pragma omp single
            t1 = now();
            total += x;
        }
        sink += total;
        if (t1 - t0 < best) best = t1 - t0;
    }
    (void) sink;
    return (double) ITERS / best / 1e9;
}

#define Z256(k) _mm256_set1_epi32(k)
#define Z512(k) _mm512_set1_epi32(k)
#define MADDUBS256(a, u, v, k) _mm256_add_epi16(u, _mm256_maddubs_epi16(a, v))
ARITH(maddubs_add_256, __m256i, Z256, MADDUBS256)
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define DPBUSD256(a, u, v, k) _mm256_dpbusd_epi32(a, u, v)
ARITH(dpbusd_256, __m256i, Z256, DPBUSD256)
#endif
#if defined(__AVX512BW__)
#define MADDUBS512(a, u, v, k) _mm512_add_epi16(u, _mm512_maddubs_epi16(a, v))
ARITH(maddubs_add_512, __m512i, Z512, MADDUBS512)
#endif
#if defined(__AVX512VNNI__)
#define DPBUSD512(a, u, v, k) _mm512_dpbusd_epi32(a, u, v)
ARITH(dpbusd_512, __m512i, Z512, DPBUSD512)
// dpbusd as simul's exact Q4_K column kernel's 8-row form issues it: the signed operand is 8 activations
// broadcast from memory (vpbroadcastq) for every instruction
#define DPBUSD512_BCAST(a, u, v, k) _mm512_dpbusd_epi32(a, u, _mm512_set1_epi64(*(const int64_t *) (p + 8 * (k))))
ARITH(dpbusd_512_bcast, __m512i, Z512, DPBUSD512_BCAST)
#endif

int main(int argc, char ** argv) {
    const size_t mib = argc > 1 ? (size_t) atol(argv[1]) : 1024;
    const int repeats = argc > 2 ? atoi(argv[2]) : 7;
    const int all = omp_get_num_procs();
    const size_t bytes = mib << 20;
    uint8_t * buf = aligned_alloc(64, bytes);
    if (buf == NULL) {
        fprintf(stderr, "roofline: cannot allocate %zu MiB\n", mib);
        return 1;
    }
    memset(buf, 1, bytes);
    for (int threads = 1; threads <= all; threads = threads * 2 > all && threads < all ? all : threads * 2) {
        printf("threads %d: read %.1f GB/s (%zu MiB, best of %d)\n", threads, read_rate(buf, bytes, threads, repeats), mib, repeats);
        { const double r = maddubs_add_256(threads, 3); printf("threads %d: maddubs+add 256-bit %.2f G/s = %.0f G MAC/s\n", threads, r, r * 32); }
        { const double r = clock_rate(threads, 3); printf("threads %d: dependent scalar adds %.2f G/s (about the clock rate)\n", threads, r); }
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
        { const double r = dpbusd_256(threads, 3); printf("threads %d: dpbusd 256-bit %.2f G/s = %.0f G MAC/s\n", threads, r, r * 32); }
#endif
#if defined(__AVX512BW__)
        { const double r = maddubs_add_512(threads, 3); printf("threads %d: maddubs+add 512-bit %.2f G/s = %.0f G MAC/s\n", threads, r, r * 64); }
#endif
#if defined(__AVX512VNNI__)
        { const double r = dpbusd_512(threads, 3); printf("threads %d: dpbusd 512-bit %.2f G/s = %.0f G MAC/s\n", threads, r, r * 64); }
        { const double r = dpbusd_512_bcast(threads, 3); printf("threads %d: dpbusd 512-bit, operand broadcast from memory %.2f G/s = %.0f G MAC/s\n", threads, r, r * 64); }
#endif
        if (threads == all) {
            break;
        }
    }
    free(buf);
    return 0;
}
