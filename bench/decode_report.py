"""Judging and printing a bench/decode.py report: each target part by part, the combined verdict per group (a
target holds only when every part does), and the report as text."""


def targets(report: dict, runs: dict, bpb: dict, kl_rows: dict, warm_kl_rows: dict) -> None:
    """The targets, part by part and combined per group, into report."""
    fixed, cold, warm = runs["fixed"], runs["adaptive_cold"], runs["adaptive_warm"]
    iterations_saved = 1 - warm["mean_iterations"] / cold["mean_iterations"]
    speedup = cold["tokens_per_second"] / fixed["tokens_per_second"]
    targets = [
        ("halting", "mean iterations per token <= 16", cold["mean_iterations"], cold["mean_iterations"] <= 16),
        ("halting", "tokens/s >= 2x fixed depth", speedup, speedup >= 2),
        ("warm start", ">= 30% fewer iterations than cold", iterations_saved, iterations_saved >= 0.30),
        (
            "warm start",
            ">= 99% greedy tokens unchanged",
            report["greedy_agreement"]["adaptive_warm_vs_cold"],
            report["greedy_agreement"]["adaptive_warm_vs_cold"] >= 0.99,
        ),
    ]
    if bpb:
        cost = bpb["adaptive_cold"] - bpb["fixed"]
        targets.insert(1, ("halting", "bits/byte cost <= 0.02 vs fixed depth", cost, cost <= 0.02))
    for name, run in kl_rows.items():  # the KL rule, held to the same halting target
        kl_speedup = run["tokens_per_second"] / fixed["tokens_per_second"]
        targets.append((name, "mean iterations per token <= 16", run["mean_iterations"], run["mean_iterations"] <= 16))
        if bpb:
            cost = bpb[name] - bpb["fixed"]
            targets.append((name, "bits/byte cost <= 0.02 vs fixed depth", cost, cost <= 0.02))
        targets.append((name, "tokens/s >= 2x fixed depth", kl_speedup, kl_speedup >= 2))
    for name, run in warm_kl_rows.items():  # the warm start's target under the KL rule, against its cold start
        saved = 1 - run["mean_iterations"] / kl_rows[name]["mean_iterations"]
        same = report["greedy_agreement"][f"warm_{name}_vs_cold"]
        targets.append((f"warm {name}", ">= 30% fewer iterations than cold", saved, saved >= 0.30))
        targets.append((f"warm {name}", ">= 99% greedy tokens unchanged", same, same >= 0.99))
    if "64" in report.get("path_independence", {}):
        same = report["path_independence"]["64"]
        targets.append(
            ("path independence", "depth 64: >= 99% greedy tokens the same from zero and noise", same, same >= 0.99)
        )
    report["targets"] = [
        {"target": f"{group}: {text}", "measured": round(float(v), 4), "holds": bool(ok)}
        for group, text, v, ok in targets
    ]
    # The targets are conjunctions: a part that holds alone (warm start stopping early at a worse fixed
    # point) does not make the target hold.
    groups = ("halting", "warm start", *kl_rows, *(f"warm {name}" for name in warm_kl_rows))
    groups += ("path independence",) if any(g == "path independence" for g, *_ in targets) else ()
    report["combined"] = {group: all(ok for g, _, _, ok in targets if g == group) for group in groups}


def print_report(
    report: dict, args, prompts: list[str], runs: dict, bpb: dict, kl_rows: dict, warm_kl_rows: dict
) -> None:
    print(
        f"{report['model']} ({report['onnx_dir']}), {args.solver}, tol {args.tol:g}, cap {args.cap}, "
        f"fixed depth {args.fixed}; {len(prompts)} prompts x {args.tokens} greedy tokens, {args.threads} thread(s)"
    )
    print(f"{'mode':<16}{'iterations/token':>18}{'tokens/s':>10}{'bits/byte':>11}")
    for name in runs:
        row = report["decoding"][name]
        b = f"{bpb[name]:.4f}" if name in bpb else "—"
        print(f"{name:<16}{row['mean_iterations_per_token']:>18.2f}{row['tokens_per_second']:>10.1f}{b:>11}")
    if bpb:
        w = report["bits_per_byte_windows"]
        print(f"bits/byte on {w['windows']} windows of {w['window']} bytes ({w['source']}), {w['seconds']} s")
    for name, rows in report.get("halting_breakdown", {}).items():
        print(f"{name}: cost against fixed depth {args.fixed} by the iteration positions halted at")
        for row in rows:
            print(
                f"  {row['iterations']:>7} iterations: {row['share']:>6.1%} of positions, {row['cost']:+.4f} bits/byte"
            )
    g = report["greedy_agreement"]
    print(
        f"greedy agreement: adaptive vs fixed {g['adaptive_cold_vs_fixed']:.4f}, "
        f"warm vs cold {g['adaptive_warm_vs_cold']:.4f}"
        + "".join(f", {name} vs fixed {g[f'{name}_vs_fixed']:.4f}" for name in kl_rows)
        + "".join(f", warm {name} vs cold {g[f'warm_{name}_vs_cold']:.4f}" for name in warm_kl_rows)
    )
    for depth, same in report.get("path_independence", {}).items():
        print(f"free-running greedy agreement, zero vs noise (seed 0), fixed depth {depth}: {same:.4f}")
        for p in report["path_partings"][depth]:
            print(
                f"  prompt {p['prompt']} parts at token {p['token']}: the zero start's two likeliest bytes "
                f"{p['zero_top2'][0]:.4f} and {p['zero_top2'][1]:.4f}; the noise start gives the zero start's byte "
                f"{p['noise_p_zeros_byte']:.4f} and its own {p['noise_p_own_byte']:.4f}"
            )
    for d in report["divergences"]:
        print(
            f"warm leaves cold at prompt {d['prompt']}, token {d['token']}: cold {bytes([d['cold']['byte']])!r} "
            f"({d['cold']['iterations']} its), warm {bytes([d['warm']['byte']])!r} ({d['warm']['iterations']} its); "
            f"settled context: {d['context_positions_above_tol']} position(s) above tol after {args.cap} iterations "
            f"(max residual {d['context_max_residual']:.2g}); from zero against it: "
            f"{bytes([d['zero_start_on_settled_context']])!r}"
        )
    if "basins" in report:
        b = report["basins"]
        print(
            f"warm-start basins ({b['windows']} windows, one position against its converged context, "
            f"{b['seconds']} s): start, share reaching the joint fixed point, bits/byte there"
        )
        for name, row in b["starts"].items():
            print(f"  {name:<26}{row['returns']:>7.1%}{row['bits_per_byte']:>9.3f}")
    print("targets:")
    for t in report["targets"]:
        print(f"  [{'holds' if t['holds'] else 'MISSED'}] {t['target']}: {t['measured']}")
    for group, holds in report["combined"].items():
        label = f"halting by {group}" if group in kl_rows else group
        verb = "holds at depth 64" if group == "path independence" else "pays"
        print(f"{label} {verb} (every part above): {'holds' if holds else 'MISSED'}")
