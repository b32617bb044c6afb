"""Speculative-decoding arithmetic (DESIGN, "Analysis": break-even, required acceptance, projection).

Pure: numbers in, numbers and plain dicts out. Times are in milliseconds as the profiles print
them; throughputs in tokens per second. With tokens per cycle `tau`, cycle time `T` and a
non-speculative baseline throughput `B`:

- throughput `= tau / T`; break-even `tau* = B * T`;
- per-position acceptance `p` with `k` draft steps gives `1 + p + ... + p**k` tokens per cycle
  (each draft position is kept only if every earlier one was, plus the bonus token);
- "if verify took V' ms": `T' = T - V + V'`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict

from runs.display import figure, signed

# Bisection halves [0, 1] this many times: 2**-60 is far below the 1e-9 the pages need, and a
# fixed count keeps the answer monotonic in the target (see required_acceptance).
_BISECTION_ROUNDS = 60

# R*T computed from rounded inputs can land a hair above k+1 when the target is exactly the
# p = 1 throughput; treat that as reachable at p = 1 rather than impossible.
_REACH_TOLERANCE = 1e-9

DEFAULT_P_VALUES: tuple[float, ...] = tuple(i / 20 for i in range(21))


def _check_cycle(cycle_ms: float) -> None:
    if cycle_ms <= 0:
        raise ValueError(f"cycle time must be positive, got {cycle_ms} ms")


def _check_steps(steps: int) -> None:
    if steps < 0:
        raise ValueError(f"draft steps must be >= 0, got {steps}")


def throughput_tok_s(tokens_per_cycle: float, cycle_ms: float) -> float:
    _check_cycle(cycle_ms)
    return tokens_per_cycle / (cycle_ms / 1000.0)


def break_even_tokens_per_cycle(baseline_tok_s: float, cycle_ms: float) -> float:
    """Tokens each cycle must yield for this cycle time to match the baseline: B * T."""
    _check_cycle(cycle_ms)
    if baseline_tok_s < 0:
        raise ValueError(f"baseline throughput must be >= 0, got {baseline_tok_s} tok/s")
    return baseline_tok_s * (cycle_ms / 1000.0)


def expected_tokens_per_cycle(p: float, steps: int) -> float:
    """(1 - p**(k+1)) / (1 - p): expected tokens per cycle at per-position acceptance p."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"acceptance must be in [0, 1], got {p}")
    _check_steps(steps)
    # Horner's form of 1 + p + ... + p**k instead of the closed form: the closed form cancels
    # catastrophically as p -> 1 and needs a special case at p == 1, and every operation here
    # is monotonic in p, so the result is too (required_acceptance's bisection relies on it).
    total = 1.0
    for _ in range(steps):
        total = 1.0 + p * total
    return total


def implied_acceptance(tokens_per_cycle: float, steps: int) -> float | None:
    """The per-position acceptance p at which k steps yield `tokens_per_cycle` on average.

    0.0 when one token per cycle or fewer is asked for (no draft token needs accepting);
    None when more than k+1 is asked for (not even p = 1 gets there).
    """
    _check_steps(steps)
    if tokens_per_cycle <= 1.0:
        return 0.0
    ceiling = steps + 1
    if tokens_per_cycle > ceiling * (1 + _REACH_TOLERANCE):
        return None
    if tokens_per_cycle >= ceiling:
        return 1.0
    # Bisection rather than Newton: the polynomial is monotonic on [0, 1], so this cannot
    # diverge, and with a fixed number of rounds a larger target never gives a smaller p.
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTION_ROUNDS):
        mid = (lo + hi) / 2
        if expected_tokens_per_cycle(mid, steps) < tokens_per_cycle:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def required_acceptance(target_tok_s: float, steps: int, cycle_ms: float) -> float | None:
    """Per-position acceptance p that makes k steps reach `target_tok_s` at this cycle time.

    Solves (1 - p**(k+1)) / (1 - p) = R * T. None when R * T > k + 1 (impossible at any
    acceptance); 0.0 when R * T <= 1 (one token per cycle already reaches the target).
    """
    _check_cycle(cycle_ms)
    # The cycle time stays put as p varies: the target verifies all k draft tokens in one
    # forward whether or not they are accepted.
    return implied_acceptance(target_tok_s * (cycle_ms / 1000.0), steps)


def projected_throughput(
    tokens_per_cycle: float, cycle_ms: float, verify_ms: float, new_verify_ms: float
) -> float:
    """Throughput if the verify phase took `new_verify_ms` instead: tau / (T - V + V')."""
    new_cycle_ms = cycle_ms - verify_ms + new_verify_ms
    if new_cycle_ms <= 0:
        raise ValueError(
            f"a {new_verify_ms} ms verify leaves a cycle of {new_cycle_ms:.3f} ms "
            f"(cycle {cycle_ms} ms, verify {verify_ms} ms)"
        )
    return throughput_tok_s(tokens_per_cycle, new_cycle_ms)


class Margin(TypedDict):
    break_even: float
    tokens_per_cycle: float
    pct: float | None


def margin(tokens_per_cycle: float, baseline_tok_s: float, cycle_ms: float) -> Margin:
    """This run's tokens per cycle against break-even: absolute and in % of break-even.

    `pct` is None when break-even is 0 (a baseline of 0 tok/s): any run beats it, by no
    meaningful percentage.
    """
    break_even = break_even_tokens_per_cycle(baseline_tok_s, cycle_ms)
    absolute = tokens_per_cycle - break_even
    return {
        "break_even": break_even,
        "tokens_per_cycle": absolute,
        "pct": absolute / break_even * 100 if break_even > 0 else None,
    }


def can_beat_baseline(baseline_tok_s: float, steps: int, cycle_ms: float) -> bool:
    """False when even p = 1 (k+1 tokens per cycle) does not exceed break-even at this cycle time."""
    _check_steps(steps)
    return steps + 1 > break_even_tokens_per_cycle(baseline_tok_s, cycle_ms)


def verdict(
    tokens_per_cycle: float | None, steps: int | None, cycle_ms: float, baseline_tok_s: float
) -> str:
    """One plain sentence: does this run beat its baseline, and by how much."""
    break_even = break_even_tokens_per_cycle(baseline_tok_s, cycle_ms)
    against = f"a {figure(baseline_tok_s, 'tok_s')} tok/s baseline at {figure(cycle_ms, 'ms')} ms/cycle"
    if steps is not None and not can_beat_baseline(baseline_tok_s, steps, cycle_ms):
        return (
            f"With {steps} draft steps this run cannot beat its baseline at any acceptance: "
            f"even accepting every draft token gives {steps + 1} tokens/cycle, "
            f"and break-even against {against} is {figure(break_even, 'tokens')}."
        )
    if tokens_per_cycle is None:
        return f"Break-even against {against} is {figure(break_even, 'tokens')} tokens/cycle."
    m = margin(tokens_per_cycle, baseline_tok_s, cycle_ms)
    pct = f" ({signed(m['pct'], 0)}%)" if m["pct"] is not None else ""
    if m["tokens_per_cycle"] >= 0:
        side = "above" if m["tokens_per_cycle"] > 0 else "exactly at"
        return (
            f"This run makes {figure(tokens_per_cycle, 'tokens')} tokens/cycle, "
            f"{figure(abs(m['tokens_per_cycle']), 'tokens')} "
            f"{side} the break-even {figure(break_even, 'tokens')}{pct} against {against}."
        )
    sentence = (
        f"This run makes {figure(tokens_per_cycle, 'tokens')} tokens/cycle, {figure(-m['tokens_per_cycle'], 'tokens')} "
        f"below the break-even {figure(break_even, 'tokens')}{pct} against {against}: it is slower than its baseline."
    )
    if steps is not None:
        needed = implied_acceptance(break_even, steps)
        if needed is not None:
            sentence += f" Matching it needs per-position acceptance of {figure(needed, 'p')} with {steps} steps."
    return sentence


def acceptance_curve(
    cycle_ms: float,
    p_values: Sequence[float] = DEFAULT_P_VALUES,
    steps_range: Iterable[int] = range(1, 6),
) -> list[dict]:
    """Throughput against per-position acceptance, one series per step count, at one cycle time.

    Holds the cycle time fixed across k on purpose: it answers "at the cycle time I measured,
    which k and which acceptance would I need", not what a different k would cost (more draft
    steps make a longer cycle).
    """
    _check_cycle(cycle_ms)
    series = []
    for steps in steps_range:
        tokens = [expected_tokens_per_cycle(p, steps) for p in p_values]
        series.append({
            "steps": steps,
            "p": list(p_values),
            "tokens_per_cycle": tokens,
            "throughput_tok_s": [throughput_tok_s(t, cycle_ms) for t in tokens],
        })
    return series


def _number(summary: dict | None, key: str) -> float | None:
    value = (summary or {}).get(key)
    return None if value is None else float(value)


def _missing(what: dict[str, float | None]) -> str | None:
    """A reason naming the first missing input, or None when all are there and usable."""
    for name, value in what.items():
        if value is None:
            return f"no {name}"
        if name == "cycle time" and value <= 0:
            return f"cycle time is {value:g} ms"
    return None


def analysis(
    run_summary: dict,
    baseline_summary: dict | None,
    target_tok_s: float | None = None,
    best_verify_ms: float | None = None,
) -> dict:
    """Everything the run and compare pages show about one speculative run, as one plain dict.

    Keys: run, break_even, margin, required_acceptance, projection, curve, verdict. Each
    section is a dict whose figures are None, with `reason` saying why, when an input is
    missing; nothing here raises on missing or zero inputs.
    """
    tau = _number(run_summary, "tokens_per_cycle")
    cycle = _number(run_summary, "cycle_ms")
    verify = _number(run_summary, "verify_ms")
    steps_value = (run_summary or {}).get("steps")
    # A negative step count is no step count: treat it as missing rather than raise mid-page.
    steps = None if steps_value is None or int(steps_value) < 0 else int(steps_value)
    baseline = _number(baseline_summary, "throughput_tok_s")

    run_reason = _missing({"tokens per cycle": tau, "cycle time": cycle})
    implied_reason = _missing({"tokens per cycle": tau, "step count": steps})
    implied = implied_acceptance(tau, steps) if tau is not None and steps is not None else None
    if implied_reason is None and implied is None:
        implied_reason = f"{tau:g} tokens/cycle is more than {steps} steps can yield"
    modelled = None
    if run_reason is None:
        assert tau is not None and cycle is not None  # _missing() found both present
        modelled = throughput_tok_s(tau, cycle)
    run = {
        "throughput_tok_s": _number(run_summary, "throughput_tok_s"),
        "tokens_per_cycle": tau,
        "cycle_ms": cycle,
        "verify_ms": verify,
        "steps": steps,
        # tau / T, not the logged throughput: the projection and the curve are on this basis,
        # so a page comparing them must compare like with like.
        "modelled_tok_s": modelled,
        "modelled_reason": run_reason,
        "implied_acceptance": implied,
        "implied_acceptance_reason": implied_reason,
    }

    if baseline_summary is None:
        baseline_reason: str | None = "no baseline run"
    elif baseline is None:
        baseline_reason = "the baseline run has no throughput"
    elif baseline < 0:
        baseline_reason = f"the baseline throughput is {baseline:g} tok/s"
    else:
        baseline_reason = _missing({"cycle time": cycle})

    # acceptance and can_beat also need the step count, hence their own reason.
    break_even: dict = {"baseline_tok_s": baseline, "tokens_per_cycle": None, "reason": baseline_reason,
                        "acceptance": None, "can_beat": None,
                        "acceptance_reason": baseline_reason or _missing({"step count": steps})}
    if baseline_reason is None:
        assert baseline is not None and cycle is not None  # the checks above found both present
        break_even["tokens_per_cycle"] = break_even_tokens_per_cycle(baseline, cycle)
    if break_even["acceptance_reason"] is None:
        assert baseline is not None and cycle is not None and steps is not None  # all checked above
        break_even["acceptance"] = required_acceptance(baseline, steps, cycle)
        break_even["can_beat"] = can_beat_baseline(baseline, steps, cycle)
        if break_even["acceptance"] is None:
            break_even["acceptance_reason"] = f"{steps} steps cannot reach the baseline at any acceptance"

    margin_section: dict = {"tokens_per_cycle": None, "pct": None,
                            "reason": baseline_reason or _missing({"tokens per cycle": tau})}
    if margin_section["reason"] is None:
        assert tau is not None and baseline is not None and cycle is not None  # all checked above
        m = margin(tau, baseline, cycle)
        margin_section.update(tokens_per_cycle=m["tokens_per_cycle"], pct=m["pct"])
        if m["pct"] is None:
            margin_section["reason"] = "the baseline throughput is 0 tok/s, so no percentage"

    required: dict = {"target_tok_s": target_tok_s, "tokens_per_cycle": None, "acceptance": None,
                      "reason": _missing({"target throughput": target_tok_s, "cycle time": cycle,
                                          "step count": steps})}
    if required["reason"] is None:
        assert target_tok_s is not None and cycle is not None and steps is not None  # _missing() checked
        required["tokens_per_cycle"] = target_tok_s * (cycle / 1000.0)
        required["acceptance"] = required_acceptance(target_tok_s, steps, cycle)
        if required["acceptance"] is None:
            required["reason"] = (
                f"{target_tok_s:g} tok/s needs {figure(required['tokens_per_cycle'], 'tokens')} tokens/cycle; "
                f"{steps} steps yield at most {steps + 1}"
            )

    projection: dict = {"verify_ms": verify, "new_verify_ms": best_verify_ms, "cycle_ms": cycle,
                        "new_cycle_ms": None, "throughput_tok_s": None, "change_pct": None,
                        "reason": _missing({"verify time to try": best_verify_ms, "verify time": verify,
                                            "tokens per cycle": tau, "cycle time": cycle})}
    if projection["reason"] is None and verify is not None and best_verify_ms is not None \
            and verify <= best_verify_ms:
        # Only a run slower in verify than the best has anything to gain from the best's verify.
        projection["reason"] = "verify is already the fastest compared"
    if projection["reason"] is None:
        # _missing() found all four present, so run_reason was None and `modelled` is set too.
        assert best_verify_ms is not None and verify is not None and tau is not None
        assert cycle is not None and modelled is not None
        new_cycle = cycle - verify + best_verify_ms
        if new_cycle <= 0:
            projection["reason"] = f"a {best_verify_ms:g} ms verify leaves no cycle time"
        else:
            projected = projected_throughput(tau, cycle, verify, best_verify_ms)
            projection.update(
                new_cycle_ms=new_cycle,
                throughput_tok_s=projected,
                change_pct=(projected / modelled - 1) * 100,
            )

    curve_reason = _missing({"cycle time": cycle})
    curve = {
        "cycle_ms": cycle,
        "series": acceptance_curve(cycle) if curve_reason is None and cycle is not None else [],
        "baseline_tok_s": baseline if baseline_reason is None else None,
        "target_tok_s": target_tok_s,
        "run_point": (
            {"steps": steps, "p": implied, "throughput_tok_s": run["modelled_tok_s"]}
            if implied is not None and run_reason is None else None
        ),
        "reason": curve_reason,
    }

    if baseline_reason is None:
        assert baseline is not None and cycle is not None  # the baseline checks found both present
        sentence = verdict(tau, steps, cycle, baseline)
    else:
        sentence = f"No break-even verdict: {baseline_reason}."

    return {
        "run": run,
        "break_even": break_even,
        "margin": margin_section,
        "required_acceptance": required,
        "projection": projection,
        "curve": curve,
        "verdict": sentence,
    }


def analyses_against_baseline(result: dict, target: float | None) -> list[dict]:
    """The speculative-decoding arithmetic of each speculative run against the baseline."""
    runs = result["runs"]
    if not runs:
        return []
    base = runs[0]
    verifies = [r["verify_ms"] for r in runs if r["verify_ms"]]
    best_verify = min(verifies) if verifies else None
    out = []
    for r in runs:
        if not r["tokens_per_cycle"] or r["id"] == base["id"]:
            continue
        summary = {k: r[k] for k in ("throughput_tok_s", "tokens_per_cycle", "cycle_ms", "verify_ms")}
        out.append({"id": r["id"], "name": r["name"], "analysis": analysis(
            {**summary, "steps": r["steps"]}, base, target_tok_s=target, best_verify_ms=best_verify)})
    return out
