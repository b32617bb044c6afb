/* The context watcher's offer() in C (context.Watcher.offer; included by _scan.c before _scan_launch.h),
 * one for every format's lines (the NCCL and env lines of _scan_nccl.h and _scan_env.h, the bench,
 * vLLM, llama.cpp and nccl-tests lines of _scan_vllm.h and after).
 *
 * The engines hand the Watcher every line they hand a reader: a line holding one of context.WORDS
 * (not _SKIP's, not a head dump's) becomes a candidate, an unread line unless a record, setting or
 * mark of its line strikes it off at the end. A line the scanner reads in C is offered here, as
 * offer() would take it, with no call into Python: WORDS, _skipped and the cap on candidates read
 * by hand, exactly (an ASCII line: offer() reads WORDS' case-blind words in its lower(), the same
 * matches). Bound by env_bind() to the parse's own Watcher (native.py; its `wanted` is every
 * reader's: the scanner's mask of a line, its Tagger bits aside); unbound, the line goes to
 * `offer` (result.offer) as before.
 *
 * Most lines hold none of WORDS: context_hint finds first, in one pass, whether a line holds one
 * of context._HINTS' words (a word of each of WORDS' branches, case-blind: an ASCII line holding
 * none holds no WORDS). launch_env's STARTS searches the same words (_scan_launch.h).
 */

/* ---- context._HINTS: throughput|accept|bandwidth|specdecod|statistics|speculative|environment|cl version|nccl_,
 * in a line's lower() (A-Z lowered). A place can only start one where its first three bytes are one of
 * eight trigrams (each a bit): thr acc ban spe sta env `cl ` ncc, case-blind; the word is then compared
 * whole. The vector search finds the trigrams 32 places a step, by nibble tables looked up with pshufb
 * (exact: each trigram's byte at a place is one letter's two cases, which share their low nibble, or a
 * space); the plain one by a table a byte. */

static const char *const HINT_WORDS[] = {"throughput", "accept", "bandwidth", "specdecod", "speculative", "statistics",
                                         "environment", "cl version", "nccl_"};
static const Py_ssize_t HINT_LENS[] = {10, 6, 9, 9, 11, 10, 11, 10, 5};
enum { HW_THROUGHPUT, HW_ACCEPT, HW_BANDWIDTH, HW_SPECDECOD, HW_SPECULATIVE, HW_STATISTICS, HW_ENVIRONMENT, HW_CL_VERSION,
       HW_NCCL };

#define HINT_CASES(c, bits) [c] = (bits), [(c) - 'a' + 'A'] = (bits)
/* the trigrams with each byte at their place 0, 1, 2 */
static const uint8_t HINT_AT[3][256] = {
    {HINT_CASES('t', 1), HINT_CASES('a', 2), HINT_CASES('b', 4), HINT_CASES('s', 8 | 16), HINT_CASES('e', 32),
     HINT_CASES('c', 64), HINT_CASES('n', 128)},
    {HINT_CASES('h', 1), HINT_CASES('c', 2 | 128), HINT_CASES('a', 4), HINT_CASES('p', 8), HINT_CASES('t', 16),
     HINT_CASES('n', 32), HINT_CASES('l', 64)},
    {HINT_CASES('r', 1), HINT_CASES('c', 2 | 128), HINT_CASES('n', 4), HINT_CASES('e', 8), HINT_CASES('a', 16),
     HINT_CASES('v', 32), [' '] = 64},
};
#undef HINT_CASES

static inline char ctx_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* s[0:n] starts with the lower-case p[0:k], case-blind (ASCII). */
static int ctx_starts_ci(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k) {
    if (n < k) return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (ctx_lower(s[i]) != p[i]) return 0;
    return 1;
}

/* The word that starts at s[0] (s[0:n] the rest of the line): its index in HINT_WORDS, or -1. */
static int hint_at(const char *s, Py_ssize_t n) {
    char c = ctx_lower(s[0]);
    for (int k = 0; k < (int)(sizeof(HINT_WORDS) / sizeof(*HINT_WORDS)); k++)
        if (HINT_WORDS[k][0] == c && ctx_starts_ci(s, n, HINT_WORDS[k], HINT_LENS[k])) return k;
    return -1;
}

static Py_ssize_t hint_plain(const char *s, Py_ssize_t n, Py_ssize_t from, int *word) {
    const unsigned char *u = (const unsigned char *)s;
    for (Py_ssize_t i = from; i + 2 < n; i++)
        if (HINT_AT[0][u[i]] & HINT_AT[1][u[i + 1]] & HINT_AT[2][u[i + 2]] && (*word = hint_at(s + i, n - i)) >= 0)
            return i;
    return -1;
}

#ifdef HAVE_AVX2_PATH
/* HINT_AT by nibble: per place, the trigrams a byte's low (high) nibble may be of (context_hint_init) */
static uint8_t HINT_LO[3][16], HINT_HI[3][16];

static void context_hint_init(void) {
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 256; c++) {
            HINT_LO[j][c & 15] |= HINT_AT[j][c];
            HINT_HI[j][c >> 4] |= HINT_AT[j][c];
        }
}

__attribute__((target("avx2")))
static Py_ssize_t hint_avx2(const char *s, Py_ssize_t n, Py_ssize_t from, int *word) {
    const __m256i low = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    __m256i lo[3], hi[3];
    for (int j = 0; j < 3; j++) {
        lo[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)HINT_LO[j]));
        hi[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)HINT_HI[j]));
    }
    char pad[64];
    for (Py_ssize_t i = from; i + 2 < n; i += 32) {
        const char *p = s + i;
        uint32_t done = 0;  /* places of this step an earlier one has tried */
        if (n - i < 34 && n >= 34) {  /* the three loads would pass the line's end: its last 34 bytes, whose */
            Py_ssize_t back = i - (n - 34);  /* first `back` places were tried */
            p = s + n - 34, i = n - 34;
            done = (1u << back) - 1;
        } else if (n - i < 34) {  /* a short line: a copy padded with NULs (no trigram's) */
            memcpy(pad, p, (size_t)(n - i));
            memset(pad + (n - i), 0, sizeof(pad) - (size_t)(n - i));
            p = pad;
        }
        __m256i acc = _mm256_set1_epi8(-1);
        for (int j = 0; j < 3; j++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(p + j));
            __m256i l = _mm256_shuffle_epi8(lo[j], _mm256_and_si256(v, low));
            __m256i h = _mm256_shuffle_epi8(hi[j], _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
            acc = _mm256_and_si256(acc, _mm256_and_si256(l, h));
        }
        for (uint32_t found = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(acc, zero)) & ~done; found;
             found &= found - 1) {
            Py_ssize_t at = i + __builtin_ctz(found);
            if ((*word = hint_at(s + at, n - at)) >= 0) return at;
        }
    }
    return -1;
}
#else
static void context_hint_init(void) {}
#endif

/* The first place from `from` on where one of context._HINTS' words starts in s[0:n]'s lower() (A-Z
 * lowered), the word's index in HINT_WORDS in *word; -1 when none. */
static Py_ssize_t hint_find(const char *s, Py_ssize_t n, Py_ssize_t from, int *word) {
#ifdef HAVE_AVX2_PATH
    if (avx2_ok) return hint_avx2(s, n, from, word);
#endif
    return hint_plain(s, n, from, word);
}

/* Whether s[0:n] holds one of context._HINTS' words. */
static int context_hint(const char *s, Py_ssize_t n) {
    int word;
    return hint_find(s, n, 0, &word) >= 0;
}

/* Whether UTF-8 bytes s[0:n] hold a character Python's case-blind regexes match an ASCII letter with
 * (`ı` and `İ` an i, `K` a k, `ſ` an s: context.py), which may hide a word of WORDS from context_hint. */
static int ctx_folds_ascii(const char *s, Py_ssize_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        if (u[i] >= 0xc4 && ((u[i] == 0xc4 && (u[i + 1] == 0xb0 || u[i + 1] == 0xb1)) || (u[i] == 0xc5 && u[i + 1] == 0xbf)
                             || (u[i] == 0xe2 && u[i + 1] == 0x84 && i + 2 < n && u[i + 2] == 0xaa)))
            return 1;
    return 0;
}

/* Whether offer() may do something with a line of UTF-8 bytes s[0:n] (ASCII or not): a word of _HINTS,
 * or a character that matches a letter of one case-blind. */
static int context_may_offer(const char *s, Py_ssize_t n) {
    return context_hint(s, n) || ctx_folds_ascii(s, n);
}

static inline int ctx_name_char(char c) { return (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/* Where `[A-Z0-9_]+` from i ends (i when none). */
static Py_ssize_t ctx_name_end(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && ctx_name_char(s[i])) i++;
    return i;
}

/* context.WORDS.search(line) on an ASCII line. Every branch is a literal or a class run that
 * must be followed by a literal its class cannot hold, so no backtracking can find another match:
 *   throughput | acceptanc(e)? (len|rate) | Accept length | statistics +\S+: | Speculative
 *   | NCCL_[A-Z0-9_]+ set to | N(?<![\w.]N)CCL_[A-Z0-9_]+=
 *   | case-blind: avg bus bandwidth | specdecod | set by environment | [nr]ccl version
 * Each holds one of _HINTS' words at a place of its own (`bandwidth` 8 bytes in, `environment` 7, `cl
 * version` 2, the others first), case-blind: the branches are tried where those words are, found in
 * one pass (hint_find). */
static int context_words(const char *s, Py_ssize_t n) {
    int word;
    for (Py_ssize_t h = 0; (h = hint_find(s, n, h, &word)) >= 0; h++) {
        const char *p = s + h;
        Py_ssize_t left = n - h;
        switch (word) {
        case HW_THROUGHPUT:
            if (memeq(p, "throughput", 10)) return 1;
            break;
        case HW_ACCEPT:
            if (starts_len(p, left, "acceptanc", 9)) {
                Py_ssize_t j = 9 + (left > 9 && p[9] == 'e');
                if (starts_len(p + j, left - j, " len", 4) || starts_len(p + j, left - j, " rate", 5)) return 1;
            }
            if (starts_len(p, left, "Accept length", 13)) return 1;
            break;
        case HW_BANDWIDTH:
            if (h >= 8 && ctx_starts_ci(p - 8, 8, "avg bus ", 8)) return 1;
            break;
        case HW_SPECDECOD:
            return 1;
        case HW_SPECULATIVE:
            if (memeq(p, "Speculative", 11)) return 1;
            break;
        case HW_STATISTICS:
            if (starts_len(p, left, "statistics ", 11)) {
                Py_ssize_t j = 11;
                while (j < left && p[j] == ' ') j++;
                /* \S+: -- the run of non-spaces holds a ':' after its first character */
                for (Py_ssize_t k = j + 1; k < left && !is_space(p[k]); k++)
                    if (p[k] == ':' && !is_space(p[j])) return 1;
            }
            break;
        case HW_ENVIRONMENT:
            if (h >= 7 && ctx_starts_ci(p - 7, 7, "set by ", 7)) return 1;
            break;
        case HW_CL_VERSION:
            if (h >= 2 && (ctx_lower(p[-2]) == 'n' || ctx_lower(p[-2]) == 'r') && ctx_lower(p[-1]) == 'c') return 1;
            break;
        default:  /* HW_NCCL */
            if (memeq(p, "NCCL_", 5)) {
                Py_ssize_t j = ctx_name_end(p, left, 5);
                if (j > 5 && starts_len(p + j, left - j, " set to ", 8)) return 1;
                if (j > 5 && j < left && p[j] == '=' && (h == 0 || !(is_word(p[-1]) || p[-1] == '.'))) return 1;
            }
            break;
        }
    }
    return 0;
}

/* After an `NCCL INFO|WARN|TRACE`, _SKIP's look-ahead words, cased: set by environment, NCCL_[A-Z0-9_]+ set
 * to, [NR]CCL version (each holds one of _HINTS' words: tried where hint_find finds those). */
static int ctx_echo_words(const char *s, Py_ssize_t n) {
    int word;
    for (Py_ssize_t h = 0; (h = hint_find(s, n, h, &word)) >= 0; h++) {
        const char *p = s + h;
        if (word == HW_ENVIRONMENT && h >= 7 && memeq(p - 7, "set by environment", 18)) return 1;
        if (word == HW_CL_VERSION && h >= 2 && (p[-2] == 'N' || p[-2] == 'R') && memeq(p - 1, "CCL version", 11))
            return 1;
        if (word == HW_NCCL && memeq(p, "NCCL_", 5)) {
            Py_ssize_t j = ctx_name_end(p, n - h, 5);
            if (j > 5 && starts_len(p + j, n - h - j, " set to", 7)) return 1;
        }
    }
    return 0;
}

/* context._skipped(line): `Decode batch|Prefill batch|^-{3,}[\w ]+-{3,}\s*$|NCCL (?:INFO|WARN|TRACE)(?!.*(?:...))`.
 * The look-ahead reads the rest of the line: it fails after an earlier level word whenever it fails
 * after the last one, so the last one decides. (The literals found by memchr: find_at.) */
static int context_skipped(const char *s, Py_ssize_t n) {
    for (const char *p = s; (p = find_at(p, n - (p - s), "batch", 5, 0)); p++) {
        Py_ssize_t at = p - s;
        if ((at >= 7 && memeq(p - 7, "Decode ", 7)) || (at >= 8 && memeq(p - 8, "Prefill ", 8))) return 1;
    }
    if (starts_len(s, n, "---", 3)) {  /* each run is maximal: a shorter one leaves a character no next piece takes */
        Py_ssize_t i = 0, j;
        while (i < n && s[i] == '-') i++;
        j = i;
        while (j < n && (is_word(s[j]) || s[j] == ' ')) j++;
        if (j > i) {
            Py_ssize_t k = j;
            while (k < n && s[k] == '-') k++;
            if (k - j >= 3) {
                while (k < n && is_space(s[k])) k++;
                if (k == n) return 1;
            }
        }
    }
    Py_ssize_t after = -1;
    for (const char *p = s; (p = find_at(p, n - (p - s), "NCCL ", 5, 0)); p++) {
        Py_ssize_t at = p - s + 5, left = n - at;
        if (starts_len(s + at, left, "INFO", 4) || starts_len(s + at, left, "WARN", 4)) after = at + 4;
        else if (starts_len(s + at, left, "TRACE", 5)) after = at + 5;
    }
    return after >= 0 && !ctx_echo_words(s + after, n - after);
}

static void context_clear(context_fast *c) {
    Py_CLEAR(c->watcher);
    Py_CLEAR(c->candidates);
    Py_CLEAR(c->dump_lines);
    c->fetched = 0;
}

/* The Watcher's sets for this scan call: 1, or 0 when they are not sets (offer() is called then). */
static int context_fetch(context_fast *c) {
    c->fetched = -1;
    if (!c->watcher) return 0;
    Py_XSETREF(c->candidates, PyObject_GetAttrString(c->watcher, "candidates"));
    Py_XSETREF(c->dump_lines, PyObject_GetAttrString(c->watcher, "dump_lines"));
    if (!c->candidates || !c->dump_lines || !PySet_CheckExact(c->candidates) || !PySet_CheckExact(c->dump_lines)) {
        PyErr_Clear();
        return 0;
    }
    PyObject *truncated = GET_ATTR(c->watcher, "truncated");
    c->truncated = truncated ? PyObject_IsTrue(truncated) > 0 : 0;
    Py_XDECREF(truncated);
    PyErr_Clear();
    c->fetched = 1;
    return 1;
}

/* offer(lineno, line) for an ASCII line the scanner reads, `wanted` whether a format reader's
 * trigger or start is on it (its mask, the Tagger's bits aside): done here where the Watcher is
 * bound, else `offer` (result.offer, or None) is called. 0, or -1 on error. */
static int context_offer(context_fast *c, PyObject *offer, const char *s, Py_ssize_t n, PyObject *line,
                         int64_t lineno, int wanted) {
    if (!offer || offer == Py_None) return 0;
    /* offer()'s first test: full and the count said so, no line changes anything (the sets only grow, and
     * truncated is only ever set True) */
    if (c->fetched > 0 && c->truncated && PySet_GET_SIZE(c->candidates) >= c->max) return 0;
    if (!context_words(s, n)) return 0;  /* (no WORDS: offer() returns at once) */
    if (c->fetched == 0) context_fetch(c);
    if (c->fetched < 0) {
        PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
        PyObject *at = text ? PyLong_FromLongLong((long long)lineno) : NULL, *r = NULL;
        if (at) r = PyObject_CallFunctionObjArgs(offer, at, text, NULL);
        Py_XDECREF(text); Py_XDECREF(at);
        if (!r) return -1;
        Py_DECREF(r);
        return 0;
    }
    if (!wanted || context_skipped(s, n)) return 0;
    PyObject *at = PyLong_FromLongLong((long long)lineno);
    if (!at) return -1;
    int status = 0, held = PySet_Contains(c->candidates, at), dumped = held ? 0 : PySet_Contains(c->dump_lines, at);
    if (held < 0 || dumped < 0) status = -1;
    else if (!held && !dumped) {
        if (PySet_GET_SIZE(c->candidates) < c->max) status = PySet_Add(c->candidates, at);
        else if ((status = SET_ATTR(c->watcher, "truncated", Py_True)) == 0) c->truncated = 1;
    }
    Py_DECREF(at);
    return status < 0 ? -1 : 0;
}

/* hints(line) -> whether an ASCII line holds one of context._HINTS' words in its lower(), as read here
 * (the vector search where it is on: tests hold both to context.py's regex). */
static PyObject *context_hints(PyObject *Py_UNUSED(mod), PyObject *line) {
    if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) {
        PyErr_SetString(PyExc_ValueError, "hints reads an ASCII str");
        return NULL;
    }
    return PyBool_FromLong(context_hint((const char *)PyUnicode_1BYTE_DATA(line), PyUnicode_GET_LENGTH(line)));
}

/* offer_words(line) -> (WORDS.search(line) found, _skipped(line)) as read here, for an ASCII line
 * (tests hold them to context.py's own regexes). */
static PyObject *context_offer_words(PyObject *Py_UNUSED(mod), PyObject *line) {
    if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) {
        PyErr_SetString(PyExc_ValueError, "offer_words reads an ASCII str");
        return NULL;
    }
    const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    return Py_BuildValue("(NN)", PyBool_FromLong(context_words(s, n)), PyBool_FromLong(context_skipped(s, n)));
}
