/* launch_env's STARTS, read by hand (included by _scan.c after its string helpers; starts_of calls
 * it). The pattern (launch_env.Parser.STARTS, checked equal to native.C_STARTS):
 *
 *   \n(?:[$+][^\S\n]                                         `$ ` / `+ ` prompt
 *       |(?:\((?:[^()\n]|\([^()\n]*\))*\)[^\S\n]*)+          `(venv) ` tags, then a prompt:
 *        (?:\[|[$+][^\S\n]|[\w.-]+@)                          `[u@h d]$`, `$ `, `u@h:d$`
 *       |[A-Z\x80-\U0010ffff][\w.-]*[=@]                      `NAME=`, `User@host:~$`
 *       |export(?:[^\S\n]|[\w.-]*[=@])|env
 *       |(?=[$+(A-Z\x80-\U0010ffff]|export|env )                 feed()'s own first-character test
 *        (?=[^\n]*(?i:throughput|accept|bandwidth|specdecod|environment|cl version|statistics
 *                    |speculative|nccl_)))                     and a word of context.WORDS
 *
 * Only the lines launch_env.feed can act on without "NCCL_" (its trigger): its own first-character
 * test passes AND, the prompt taken off, an assignment or `export`/`env` follows (launch_env._START)
 * — so an `INFO 11-29 ...` or `Mean TTFT (ms): ...` line, a vLLM `(EngineCore pid=1) ...` line, no
 * longer stops the scan. Reads ASCII only (a non-ASCII line is every reader's: Scanner.mask); each
 * regex piece is deterministic (no alternative or repeat can give back what another then takes),
 * so the greedy walk below is the regex's one way to match. */

static inline int launch_word(char c) { return is_word(c) || c == '.' || c == '-'; }

/* [^\S\n] */
static inline int launch_space(char c) { return c != '\n' && is_space(c); }

/* Where a run of [\w.-]* from s[i] ends. */
static inline Py_ssize_t launch_words(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && launch_word(s[i])) i++;
    return i;
}

/* The words of the pattern's last branch, context._HINTS' (context_hint, _scan_context.h), found
 * case-blind in the line (up to a newline). The unread watcher (context.py) counts a line with a word
 * of WORDS that a reader is handed: these lines were handed to launch_env before, and still are, so its
 * count of `Speculative decoding was on` stays what it was. */
static int launch_has_word(const char *s, Py_ssize_t n) {
    const char *nl = memchr(s, '\n', (size_t)n);
    return context_hint(s, nl ? nl - s : n);
}

static int launch_start_strict(const char *s, Py_ssize_t n);

static int launch_start(const char *s, Py_ssize_t n) {
    if (launch_start_strict(s, n)) return 1;
    if (n == 0) return 0;
    char c = s[0];
    int broad = c == '$' || c == '+' || c == '(' || (c >= 'A' && c <= 'Z') || (unsigned char)c >= 0x80
        || starts(s, n, "export") || starts(s, n, "env ");
    return broad && launch_has_word(s, n);
}

static int launch_start_strict(const char *s, Py_ssize_t n) {
    if (n == 0) return 0;
    char c = s[0];
    if ((unsigned char)c >= 0x80) return 1;  /* not read here (see above): every reader's anyway */
    if (c == '$' || c == '+') return n > 1 && launch_space(s[1]);
    if (c >= 'A' && c <= 'Z') {
        Py_ssize_t i = launch_words(s, n, 1);
        return i < n && (s[i] == '=' || s[i] == '@');
    }
    if (c == 'e') {
        if (starts(s, n, "env ")) return 1;
        if (!starts(s, n, "export")) return 0;
        if (n > 6 && launch_space(s[6])) return 1;
        Py_ssize_t i = launch_words(s, n, 6);
        return i < n && (s[i] == '=' || s[i] == '@');
    }
    if (c != '(') return 0;
    Py_ssize_t i = 0;
    while (i < n && s[i] == '(') {  /* one tag: ( then plain characters or (...) groups, then ) */
        i++;
        for (;;) {
            if (i >= n || s[i] == '\n') return 0;
            if (s[i] == ')') break;
            if (s[i] == '(') {
                i++;
                while (i < n && s[i] != '(' && s[i] != ')' && s[i] != '\n') i++;
                if (i >= n || s[i] != ')') return 0;
            }
            i++;
        }
        i++;  /* the tag's ) */
        while (i < n && launch_space(s[i])) i++;
    }
    if (i >= n) return 0;
    if (s[i] == '[') return 1;
    if (s[i] == '$' || s[i] == '+') return i + 1 < n && launch_space(s[i + 1]);
    Py_ssize_t j = launch_words(s, n, i);
    return j > i && j < n && s[j] == '@';
}

