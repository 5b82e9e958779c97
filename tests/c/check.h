/*
 * check.h: the checks the C tests share: CHECK(cond), EXPECT(call, status) (with the
 * library's last error on failure), RUN(test) printing `ok NAME` or `FAIL NAME`, and
 * last_error(). A test program includes it once and ends with
 * `printf("%d passed, %d failed\n", g_passed, g_failed)`.
 */
#ifndef ZARRSHARD_TESTS_CHECK_H
#define ZARRSHARD_TESTS_CHECK_H

#include <stdio.h>

#include "zarrshard.h"

static int g_passed, g_failed, t_failures;

static inline void check_failed(int line, const char *what) {
    if (t_failures++ < 8) printf("    line %d: %s\n", line, what);
}

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) check_failed(__LINE__, #cond);                                        \
    } while (0)
#define EXPECT(call, want)                                                                 \
    do {                                                                                   \
        shard_status got_ = (call);                                                        \
        if (got_ != (want)) {                                                              \
            char m_[300], b_[500];                                                         \
            size_t n_;                                                                     \
            if (shard_last_error(m_, sizeof m_, &n_) != SHARD_OK) m_[0] = '\0';            \
            snprintf(b_, sizeof b_, "%s = %d, expected %d; last error: %s", #call,         \
                     (int)got_, (int)(want), m_);                                          \
            check_failed(__LINE__, b_);                                                    \
        }                                                                                  \
    } while (0)

static inline void run(const char *name, void (*test)(void)) {
    t_failures = 0;
    test();
    if (t_failures == 0) {
        g_passed++;
        printf("ok %s\n", name);
    } else {
        g_failed++;
        printf("FAIL %s (%d failed checks)\n", name, t_failures);
    }
    fflush(stdout);
}
#define RUN(test) run(#test, test)

/* The last error's message. */
static inline const char *last_error(void) {
    static char buf[1024];
    size_t n;
    if (shard_last_error(buf, sizeof buf, &n) != SHARD_OK) buf[0] = '\0';
    return buf;
}

#endif
