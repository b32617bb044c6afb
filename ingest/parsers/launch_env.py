"""The environment a run was launched with (DESIGN, "Words": declared and effective).

Declared (what the launcher set):
    $ NCCL_PROTO=LL NCCL_ALGO=Ring python3 launch.py --steps 2      (launch prefix; also `+ `, a prompt)
    export NCCL_PROTO=LL                                            (export)
    NCCL_PROTO=LL                                                   (env dump: `env`/`printenv` output)
    mpirun -x NCCL_PROTO=LL ...  /  docker run -e NCCL_PROTO=LL     (launch flag)
    launcher pid=1559 environ NCCL_*: NCCL_PROTO=LL NCCL_ALGO=Ring  (launcher env dump)
Effective (what a worker had):
    [TP1] pid=1561 environ NCCL_*: NCCL_CUMEM_ENABLE=0              (worker env dump, rank "1")

Every NCCL_* key is kept (runs/nccl.py decides which are parameters). Other variables set on a
launch line (`SGLANG_ENABLE_SPEC_V2=1 python ...`) become `env.NAME` settings.
"""

from __future__ import annotations

import re
import shlex

from .records import NcclValue, ParseResult

NAME = "launch_env"

# Shell prompts people paste: `$ `, `+ ` (bash -x), `user@host:/path# `, `[user@host dir]$ `, each
# after any environment tags (`(venv) `, `((sglang-0.5.9) ) `, `(/path/conda_env) `). Not a bare
# `# `: in a script that is a comment.
_PROMPT = re.compile(
    r"^(?:\((?:[^()]|\([^()]*\))*\)\s*)*"
    r"(?:\[[\w.-]+@[\w.-]+(?: [^\]]*)?\][#$]\s*|[\w.-]+@[\w.-]+:\S*?[#$]\s*|[$+]\s+)"
)
_START = re.compile(r"^(?:export|declare -x|env)\s+|^[A-Za-z_][A-Za-z0-9_]*=")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
# `-x`/`-e`/`--env` at the start or after whitespace, not `declare -x`: the look-behinds are taken
# after the `-`, so the search runs on to each `-` (a long mpirun line took 16 µs, now 5).
_FLAG = re.compile(r"""-(?<!\S-)(?<!declare\s-)(?:x|e|-env)[\s=]+(NCCL_[A-Z0-9_]+)=("[^"]*"|'[^']*'|\S+)""")
_DUMP = re.compile(r"^(.*?)\bpid=(\d+) environ\b[^:]*:\s*(.*)$")
_DUMP_PAIR = re.compile(r"(NCCL_[A-Z0-9_]+)=(\S+)")
_TP = re.compile(r"\bTP(\d+)\b")
_RANK = re.compile(r"\brank[= ](\d+)\b")
# Variables never stored as settings: values shown on screen must not leak credentials.
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|(?:^|_)KEY(?:$|_)")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


_ESCAPED = re.compile(r"\\(.)")


def _shell_value(value: str) -> str:
    """A word as the shell hands it to the program: quotes off, `\\,` -> `,` outside quotes
    (mpirun command lines echoed by scripts escape commas and spaces)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    if "\\" not in value:  # most values: re.sub would give them back as they are
        return value
    return _ESCAPED.sub(_escaped, value)


def _escaped(m: re.Match) -> str:
    return m.group(1)  # (a function: a template is parsed again at each sub())


# What shlex.split() reads other than whitespace between words: quotes and escapes (posix mode,
# no comments), and the whitespace str.split() takes that shlex does not.
_SHELL_SYNTAX = re.compile(r"""['"\\\x0b\x0c\x1c-\x1f]|[^\x00-\x7f]""")
# What of it is not quotes: with none, shlex.split() reads quotes alone, as _QUOTED and _SHELL_WORD do.
_NOT_QUOTES = re.compile(r"[\\\x0b\x0c\x1c-\x1f]|[^\x00-\x7f]")
# A quoted part: from a quote to the next of the same kind (outside quotes each quote opens one; so
# a left-to-right search pairs them as the shell does). A word: unquoted characters and quoted parts
# up to whitespace outside quotes (each branch starts with its own character and nothing follows
# the loop: a word is never given back, so the search is linear, a run of plain characters at once).
_QUOTED = re.compile(r""""[^"]*"|'[^']*'""")
_SHELL_WORD = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""")


def shell_words(text: str) -> list[str] | None:
    """shlex.split(text)'s words, None where it raises (a quote never closed, a last `\\`): shlex
    tokenizes in Python, a character a call (a long command took ~0.5 ms, a joined one 4 ms)."""
    if not _SHELL_SYNTAX.search(text):
        return text.split()
    if not _NOT_QUOTES.search(text):  # quotes alone (`NCCL_IB_HCA="=mlx5_0,..."`): shlex's words again
        rest = _QUOTED.sub("", text)
        if "'" in rest or '"' in rest:
            return None
        return [_QUOTED.sub(_inside, w) if '"' in w or "'" in w else w for w in _SHELL_WORD.findall(text)]
    try:
        return shlex.split(text)
    except ValueError:
        return None


def _inside(quoted: re.Match) -> str:
    """A quoted part without its quotes (a function: a template is parsed again at each sub())."""
    return quoted.group()[1:-1]


def _words(text: str) -> list[str]:
    words = shell_words(text)
    return [_unquote(w) for w in text.split()] if words is None else words  # None: a cut-off line


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("NCCL_",)
    # Without "NCCL_", feed() acts only where its first-character test passes AND _command finds,
    # past any _PROMPT, an assignment or `export`/`env` (_START). So: a `$ `/`+ ` prompt; `(...)`
    # tags then a prompt's start (`[`, `$ `, `user@`); an upper-case letter (or any non-ASCII
    # character, as str.isupper() takes some) then a name and `=` (or a `User@host` prompt's `@`);
    # `export` then a space, `=` or `@`; `env `. Not the bulk of a serving log that merely starts
    # upper-case (`INFO 11-29 ...`, `Mean TTFT (ms): ...`) or with a vLLM tag (`(EngineCore pid=1)`):
    # the native scanner reads those on (_scan_launch.h reads this pattern by hand).
    # Also, as before, any line feed()'s first-character test passes that holds a word of
    # context.WORDS (these, case aside, are in every line WORDS finds): the unread watcher counts
    # a line a reader is handed (`Speculative decoding was on`), and its count stays what it was.
    STARTS: re.Pattern | None = re.compile(
        r"\n(?:[$+][^\S\n]|(?:\((?:[^()\n]|\([^()\n]*\))*\)[^\S\n]*)+(?:\[|[$+][^\S\n]|[\w.-]+@)"
        r"|[A-Z\x80-\U0010ffff][\w.-]*[=@]|export(?:[^\S\n]|[\w.-]*[=@])|env "
        r"|(?=[$+(A-Z\x80-\U0010ffff]|export|env )(?=[^\n]*(?i:throughput|accept|bandwidth|specdecod|environment"
        r"|cl version|statistics|speculative|nccl_)))")

    def __init__(self, result: ParseResult) -> None:
        self.result = result

    def feed(self, lineno: int, line: str) -> None:
        if "NCCL_" in line:
            if "environ" in line and "pid=" in line:  # (each _DUMP holds both: on a long mpirun line
                # that names `environment` its lazy prefix took 50 µs to fail)
                m = _DUMP.match(line)
                if m:
                    self._dump(lineno, m)
                    return
            if " -x" in line or " -e" in line or "--env" in line:
                for key, value in _FLAG.findall(line):
                    self._declared(lineno, key, _shell_value(value), "launch flag")
            self._command(lineno, line)
        elif line[:1] in ("$", "+", "(") or line[:1].isupper() or line.startswith(("export", "env ")):
            self._command(lineno, line)

    def busy(self) -> bool:
        return False

    def finish(self) -> None:
        pass

    def _dump(self, lineno: int, m: re.Match) -> None:
        prefix, pid, body = m.groups()
        if "launcher" in prefix.lower():
            for key, value in _DUMP_PAIR.findall(body):
                self._declared(lineno, key, value, "launcher env dump")
            return
        rank = _TP.search(prefix) or _RANK.search(prefix)
        name = rank.group(1) if rank else f"pid {pid}"
        r = self.result
        r.add_format(NAME)
        for key, value in _DUMP_PAIR.findall(body):
            r.nccl.append(NcclValue(key, value, "effective", lineno, "worker env dump", name))

    def _command(self, lineno: int, line: str) -> None:
        text = line.strip()
        prompt = _PROMPT.match(text)
        if prompt:
            text = text[prompt.end():]
        if not _START.match(text):
            return
        words = _words(text)
        source = "launch prefix"
        if words and words[0] in ("export", "declare", "env"):
            source = "launch prefix" if words[0] == "env" else "export"
            words = words[2:] if words[0] == "declare" else words[1:]
        pairs = []
        for word in words:
            a = _ASSIGNMENT.match(word)
            if not a:
                break
            pairs.append((a.group(1), a.group(2)))
        if not pairs:
            return
        if source == "launch prefix" and len(words) == 1 and not prompt:
            source = "env dump"  # `NCCL_X=Y` alone on a line: `env`/`printenv` output
        for key, value in pairs:
            if key.startswith("NCCL_"):
                self._declared(lineno, key, value, source)
            elif source != "env dump" and key.isupper() and not _SECRET.search(key):
                self.result.add_format(NAME)
                self.result.set(f"env.{key}", value, lineno, NAME)

    def _declared(self, lineno: int, key: str, value: str, source: str) -> None:
        if not value:
            return  # NCCL treats an empty variable as unset
        self.result.add_format(NAME)
        self.result.nccl.append(NcclValue(key, value, "declared", lineno, source))
