/* INCRBYFLOAT exactly as Redis computes it: C `long double` arithmetic and
 * Redis's human formatting ("%.17Lf", trailing zeros trimmed). Rust has no
 * long double, and f64 gives different digits (0.1 + 0.2, 5005.6 ...). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's string2ld: the whole NUL-terminated string, no leading space, no NaN. */
static int parse_ld(const char *s, size_t len, long double *out) {
    char *end;
    if (len == 0 || len >= 5120 || isspace((unsigned char)s[0])) return 0;
    errno = 0;
    long double v = strtold(s, &end);
    if (*end != '\0' || (size_t)(end - s) != len) return 0;
    if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

/* Returns 0 and writes the result text, 1 if `cur` is not a float, 2 if `inc`
 * is not, 3 if the result is NaN or infinite, 4 if `out` is too small. */
int basalt_incrbyfloat(const char *cur, size_t cur_len, const char *inc, size_t inc_len,
                       char *out, size_t out_cap, size_t *out_len) {
    long double a = 0, b;
    if (cur != NULL && !parse_ld(cur, cur_len, &a)) return 1;
    if (!parse_ld(inc, inc_len, &b)) return 2;
    long double v = a + b;
    if (isnan(v) || isinf(v)) return 3;
    int l = snprintf(out, out_cap, "%.17Lf", v);
    if (l < 0 || (size_t)l + 1 > out_cap) return 4;
    if (strchr(out, '.') != NULL) {
        char *p = out + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') { out[0] = '0'; l = 1; }
    *out_len = (size_t)l;
    return 0;
}

/* getTimeoutFromObjectOrReply for seconds: 0 and the milliseconds (rounded
 * up) in `ms`, 1 if `s` is not a float, 2 if out of range, 3 if negative. */
int basalt_timeout_ms(const char *s, size_t len, long long *ms) {
    long double v;
    if (!parse_ld(s, len, &v)) return 1;
    v *= 1000.0L;
    if (v > (long double)LLONG_MAX) return 2;
    v = ceill(v);
    if (v < 0) return 3;
    *ms = (long long)v;
    return 0;
}

/* Redis's addReplyHumanLongDouble text of a double (GEOPOS, WITHCOORD):
 * "%.17Lf" of it as a long double, trailing zeros and dot trimmed, "-0"
 * made "0". Returns the length, or 0 if `out` is too small. */
size_t basalt_human_double(double v, char *out, size_t out_cap) {
    int l = snprintf(out, out_cap, "%.17Lf", (long double)v);
    if (l < 0 || (size_t)l + 1 > out_cap) return 0;
    if (strchr(out, '.') != NULL) {
        char *p = out + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') { out[0] = '0'; l = 1; }
    return (size_t)l;
}

/* SORT's number: strtod over the NUL-terminated `s` (leading space, hex,
 * inf allowed), refused (returns 1) if anything is left after it, on
 * ERANGE, or for NaN, as Redis's sortCommandGeneric. */
int basalt_sort_number(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end[0] != '\0' || errno == ERANGE || isnan(v)) return 1;
    *out = v;
    return 0;
}
