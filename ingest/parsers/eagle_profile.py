"""Per-cycle speculative-decoding profile blocks (this project's `ms/cyc` format, FORMATS §6).

    [EAGLE3_PROFILE] window=100 cycles, steps=2
      Draft:               0.56 ms/cyc  ( 11.8%)
      Target verify:       4.02 ms/cyc  ( 83.6%)
      Cycle total:         4.80 ms/cyc
      Accept len:          1.24          <- accepted draft tokens; tokens/cycle = 1.24 + 1
      Throughput:         466.3 tok/s

A non-speculative run prints `Target forward: 4.09 ms/step` with no header: each step is a
cycle of one phase. Any `Name: X ms/cyc (P%)` line is a phase, whatever the name.

Hand-made summary tables (tenstorrent vllm-tt-plugin PR #130) give one configuration per row:

    accept 2 of 5          257 iters   1.992 tok/iter    5.420 ms/iter

Each row is a window: `tok/iter` counts every token an iteration emits (1.000 without
speculation), so it is tokens per cycle as is; `ms/iter` is the cycle time.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from .columns import MAIN, METRIC_SCHEMA, PHASE_SCHEMA, Chunk, LaneRows, marked, plain_lines, untagged
from .records import Metric, ParseResult, Phase

NAME = "eagle_profile"

_HEADER = re.compile(r"\[(\w+?)_PROFILE\]\s*(.*)$")
_HEADER_FIELD = re.compile(r"(\w+)=(\d+)")
_PHASE = re.compile(
    r"^\s*([A-Za-z][\w /+\-]*?)\s*:\s+(\d+(?:\.\d+)?)\s*ms/(cyc|cycle|step|iter)\b"
    r"(?:\s*\(\s*(\d+(?:\.\d+)?)\s*%\s*\))?"
)
_TABLE_ROW = re.compile(
    r"^\s*(\S.*?)\s+(\d+)\s+(?:iters?|cycles?|steps?)\s+(\d+(?:\.\d+)?)\s*tok/(?:iter|cyc|step)\s+"
    r"(\d+(?:\.\d+)?)\s*ms/(?:iter|cyc|step)\s*$"
)
_VALUE = re.compile(r"^\s+(Accept len|Accept length|Throughput)\s*:\s+(\d+(?:\.\d+)?)\s*(tok/s)?\s*$")
_TOTALS = {"cycle total", "total", "cycle"}
# The same patterns for the chunk lane (lane()): `` classes, on printable ASCII lines only.
_LANE_HEADER = r"\[(\w+?)_PROFILE\]\s*(.*)$"
_LANE_HEADER_FOUND = r"\[\w+_PROFILE\]"  # where _HEADER.search finds a match (no captures: faster)
_LANE_PHASE = _PHASE.pattern
_LANE_TABLE = _TABLE_ROW.pattern
_LANE_VALUE = _VALUE.pattern
_PCT = r"^(?:cyc|cycle|step|iter)\b\s*\(\s*\d+(?:\.\d+)?\s*%\s*\)"  # what follows "ms/" when _PHASE has group 4


def _where(lines: pl.Series, mask: pl.Series, test: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """`test` of the lines where `mask` holds (False elsewhere), run on those lines only."""
    at = mask.arg_true()
    out = pl.repeat(False, len(lines), eager=True, dtype=pl.Boolean)
    if len(at):
        out.scatter(at, test(lines.gather(at)))
    return out


class Parser:
    name = NAME
    # The lines feed() acts on while not busy() (the engine hands it only these, see records.Parser).
    TRIGGERS: tuple[str, ...] = ("_PROFILE]", "ms/")
    STARTS: re.Pattern | None = None

    def __init__(self, result: ParseResult) -> None:
        self.result = result
        self.window = 0
        self.in_block = False
        self.seen: set[str] = set()  # phase names in the current window

    def feed(self, lineno: int, line: str) -> None:
        if "_PROFILE]" in line:
            self._header(lineno, line)
            return
        if "ms/" in line:
            if "tok/" in line:
                m = _TABLE_ROW.match(line)
                if m:
                    self._table_row(lineno, m)
                    return
            m = _PHASE.match(line)
            if m:
                self._phase(lineno, m)
                return
        if self.in_block:
            m = _VALUE.match(line)
            if m:
                self._value(lineno, m.group(1), float(m.group(2)))
            elif not line.startswith((" ", "\t")):
                self.in_block = False

    def busy(self) -> bool:
        return self.in_block  # an Accept len / Throughput line, or the line that ends the block

    def finish(self) -> None:
        pass

    def lane(self, chunk: Chunk, rdr: int) -> LaneRows | None:
        """The chunk's records as columns, its state moved on as feed() would (None: declined).

        Declines summary-table rows (windows of their own), a first record (formats and settings
        are set in order by feed()), a line that is not printable ASCII, an accept length with
        over 6 decimals (round() is exact below that, see _value). Headerless phases (a run
        without speculation) have their windows counted in Python (_count_windows).
        """
        r = self.result
        if NAME not in r.formats:
            return None
        line = pl.col("l")
        lines = chunk.series
        n = len(lines)
        prof = lines.str.contains("_PROFILE]", literal=True)
        ms = lines.str.contains("ms/", literal=True) & ~prof
        indented = lines.str.starts_with(" ") | lines.str.starts_with("\t")
        # The regexes run only on the lines that can match them (a value line is indented: see ends).
        header = _where(lines, prof, lambda sub: sub.str.contains(_LANE_HEADER_FOUND))
        phase = _where(lines, ms, lambda sub: sub.str.contains(_LANE_PHASE))
        if _where(lines, ms & ~phase, lambda sub: sub.str.contains("tok/", literal=True)
                  & sub.str.contains(_LANE_TABLE)).any():
            return None  # summary-table rows: windows of their own, read in Python
        value = _where(lines, indented & ~prof & ~phase, lambda sub: sub.str.contains(_LANE_VALUE))
        ends = ~indented & ~prof & ~phase
        df = pl.DataFrame({"pos": pl.int_range(n, eager=True, dtype=pl.Int64), "header": header, "phase": phase,
                           "value": value, "prof": prof, "ms": ms})
        df = df.with_columns(event=pl.when(header).then(True).when(ends).then(False).otherwise(None))
        # In a block before the line: the last header or block end above it (or the state carried in).
        df = df.with_columns(inside=pl.col("event").shift(1).forward_fill().fill_null(self.in_block))
        if not chunk.plain and not plain_lines(
                chunk, df.filter(pl.col("prof") | pl.col("ms") | pl.col("inside")).get_column("pos")):
            return None
        after: tuple[int, set[str]] | None = None  # the window and names seen, when counted in Python
        if df.select((pl.col("phase") & ~pl.col("inside")).any()).item():
            # Headerless phases (a run without speculation): a repeated name opens a window
            # (_phase), so the windows are counted in one pass over the header and phase lines.
            df, after = self._count_windows(df, lines)
        else:
            # The window of every line: one more per header above or on it.
            df = df.with_columns(window=pl.col("header").cast(pl.Int64).cum_sum() + self.window)

        def rows(where: pl.Expr) -> pl.DataFrame:  # the lines where `where` holds, with their columns
            picked = df.filter(where).select("pos", "window")
            return picked.with_columns(l=lines.gather(picked.get_column("pos")))

        # The process of a record's line: "main" (untagged()). A phase or value line starts with
        # a space or a letter: only the literals anywhere in the line could tag it otherwise.
        names, values = rows(pl.col("phase")), rows(pl.col("value") & pl.col("inside"))
        if names.select(marked(line).any()).item() or values.select(marked(line).any()).item():
            return None
        headers = rows(pl.col("header"))
        if headers.height:
            if "spec.algorithm" not in r.settings:
                return None  # the first header sets it: in order, in feed()
            # _HEADER.search's group 2 follows the first "_PROFILE]" when it is the only one.
            if not headers.select(untagged(line).all()).item() or headers.select(
                    line.str.count_matches("_PROFILE]", literal=True).max()).item() > 1:
                return None
            # dict(_HEADER_FIELD.findall(...)): the last `window=` of a header counts.
            fields = headers.select("pos", "window", rest=line.str.split_exact("_PROFILE]", 1).struct.field("field_1")
                                    .str.extract_all(r"\w+=\d+")).explode("rest")
            if "spec.steps" not in r.settings and fields.get_column("rest").str.starts_with("steps=").any():
                return None  # the first steps= sets spec.steps: in order, in feed()
            fields = fields.filter(pl.col("rest").str.starts_with("window="))
        # The groups of _PHASE and _VALUE cut out with string splits (a regex's captures cost 4x its
        # match): the name has no colon, so it is all before the first one; the number is all
        # after it up to "ms/"; the percentage is there when _PCT matches what follows "ms/".
        head = line.str.split_exact(":", 1)
        unit = head.struct.field("field_1").str.split_exact("ms/", 1)
        names = names.with_columns(
            name=head.struct.field("field_0").str.strip_chars(),
            ms_=unit.struct.field("field_0").str.strip_chars().cast(pl.Float64),
            after=unit.struct.field("field_1"))
        names = names.with_columns(pct_=pl.when(pl.col("after").str.contains(_PCT)).then(
            pl.col("after").str.split_exact("(", 1).struct.field("field_1").str.split_exact("%", 1)
            .struct.field("field_0").str.strip_chars().cast(pl.Float64)))
        values = values.with_columns(**{
            "1": head.struct.field("field_0").str.strip_chars(),
            "2": head.struct.field("field_1").str.strip_chars().str.strip_suffix("tok/s").str.strip_chars()})
        accept = values.filter(pl.col("1").str.starts_with("Accept"))
        if accept.filter(pl.col("2").str.contains(r"\.\d{7}")).height:
            return None
        total = pl.col("name").str.to_lowercase().is_in(list(_TOTALS))
        phases = names.filter(~total).select(
            name="name", ms="ms_", pct="pct_", window="window", line=pl.col("pos") + chunk.first,
            source=pl.lit(NAME), process=pl.lit(MAIN), pos="pos", rdr=pl.lit(rdr, pl.Int64), k=pl.lit(0, pl.Int64))
        metric_parts = [names.filter(total).select(
            name=pl.lit("cycle_ms"), value="ms_", window="window", pos="pos", k=pl.lit(0, pl.Int64))]
        if headers.height:
            metric_parts.append(fields.group_by("pos", maintain_order=True).last().select(
                name=pl.lit("window_cycles"), value=pl.col("rest").str.slice(7).cast(pl.Float64), window="window",
                pos="pos", k=pl.lit(0, pl.Int64)))
        raw = accept.select(name=pl.lit("accept_len_raw"), value=pl.col("2").cast(pl.Float64), window="window",
                            pos="pos", k=pl.lit(0, pl.Int64))
        metric_parts += [
            raw,
            # round(value + 1, 6), exact for values of at most 6 decimals (checked above).
            raw.with_columns(name=pl.lit("tokens_per_cycle"), value=(pl.col("value") + 1).round(6),
                             k=pl.lit(1, pl.Int64)),
            values.filter(~pl.col("1").str.starts_with("Accept")).select(
                name=pl.lit("throughput_tok_s"), value=pl.col("2").cast(pl.Float64), window="window", pos="pos",
                k=pl.lit(0, pl.Int64)),
        ]
        metrics = pl.concat(metric_parts).select(
            "name", "value", "window", line=pl.col("pos") + chunk.first, source=pl.lit(NAME), rank=pl.lit(""),
            process=pl.lit(MAIN), pos="pos", rdr=pl.lit(rdr, pl.Int64), k="k")
        # The state feed() would have after the chunk's lines.
        last = df.select(pl.col("event").forward_fill().last()).item()
        self.in_block = self.in_block if last is None else last
        if after is not None:
            self.window, self.seen = after
        elif headers.height:
            last_header = headers.select("pos").to_series()[-1]
            self.seen = set(names.filter(pl.col("pos") > last_header).get_column("name").to_list())
            self.window += headers.height
        else:
            self.seen.update(names.get_column("name").to_list())
        return LaneRows(None, phases.cast(PHASE_SCHEMA), metrics.cast(METRIC_SCHEMA))

    def _count_windows(self, df: pl.DataFrame, lines: pl.Series) -> tuple[pl.DataFrame, tuple[int, set[str]]]:
        """Each line's window as feed() counts them (_header, _phase), in one Python pass over the
        header and phase lines only; with the window and the names seen after the chunk."""
        events = df.filter(pl.col("header") | pl.col("phase")).select("pos", "header", "inside")
        at = df.filter(pl.col("phase")).get_column("pos")
        named = dict(zip(at.to_list(), lines.gather(at).str.split_exact(":", 1).struct.field("field_0")
                         .str.strip_chars().to_list(), strict=True))
        window, seen, out = self.window, set(self.seen), []
        for pos, is_header, inside in events.iter_rows():
            if is_header:
                window, seen = window + 1, set()
            else:
                name = named[pos]
                if not inside and (name in seen or window == 0):
                    window, seen = window + 1, set()
                seen.add(name)
            out.append(window)
        marks = events.select("pos").with_columns(window=pl.Series(out, dtype=pl.Int64))
        df = df.join(marks, on="pos", how="left").sort("pos").with_columns(
            pl.col("window").forward_fill().fill_null(self.window))
        return df, (window, seen)

    def _header(self, lineno: int, line: str) -> None:
        m = _HEADER.search(line)
        if not m:
            return
        r = self.result
        r.add_format(NAME)
        self.window += 1
        self.in_block = True
        self.seen = set()
        r.set("spec.algorithm", m.group(1).upper(), lineno, NAME)
        fields = dict(_HEADER_FIELD.findall(m.group(2)))
        if "steps" in fields and "spec.steps" not in r.settings:  # the first steps= counts (as set() keeps it)
            r.set("spec.steps", r.read_int(fields["steps"], lineno, "steps="), lineno, NAME)
        if "window" in fields:
            r.metrics.append(Metric("window_cycles", float(fields["window"]), self.window, lineno, NAME))

    def _phase(self, lineno: int, m: re.Match) -> None:
        name = m.group(1).strip()
        ms = float(m.group(2))
        pct = float(m.group(4)) if m.group(4) is not None else None
        if not self.in_block and (name in self.seen or self.window == 0):
            # Headerless (non-speculative) output: a repeated phase name opens the next window.
            self.window += 1
            self.seen = set()
        self.seen.add(name)
        self.result.add_format(NAME)
        if name.lower() in _TOTALS:
            self.result.metrics.append(Metric("cycle_ms", ms, self.window, lineno, NAME))
        else:
            self.result.phases.append(Phase(name, ms, pct, self.window, lineno, NAME))

    def _table_row(self, lineno: int, m: re.Match) -> None:
        self.result.add_format(NAME)
        self.window += 1
        self.in_block = False
        self.seen = set()
        tokens, ms = float(m.group(3)), float(m.group(4))
        add = self.result.metrics.append
        add(Metric("window_cycles", float(m.group(2)), self.window, lineno, NAME))
        add(Metric("tokens_per_cycle", tokens, self.window, lineno, NAME))
        add(Metric("cycle_ms", ms, self.window, lineno, NAME))
        if ms > 0:
            add(Metric("throughput_tok_s", round(1000 * tokens / ms, 4), self.window, lineno, NAME))

    def _value(self, lineno: int, label: str, value: float) -> None:
        metrics = self.result.metrics
        if label.startswith("Accept"):
            metrics.append(Metric("accept_len_raw", value, self.window, lineno, NAME))
            # The profile counts accepted draft tokens; a cycle also emits the bonus token.
            metrics.append(Metric("tokens_per_cycle", round(value + 1, 6), self.window, lineno, NAME))
        else:
            metrics.append(Metric("throughput_tok_s", value, self.window, lineno, NAME))
