from gpuscale.report.verdict import failing_gate, verdict

SLO = {"ttft_s": 2.0, "tpot_s": 0.1}


def _run(name, slo, cost, *, tpot=0.05, dropped=0, ttft=1.0):
    return {"name": name, "slo_attainment": slo, "cost_usd": cost,
            "ttft_s": {"p50": 0.1, "p90": 0.5, "p99": ttft}, "tpot_s": {"p99": tpot},
            "requests": {"total": 100, "dropped": dropped}, "replicas": {"peak": 4},
            "drops_by_reason": {"timeout": dropped} if dropped else {}}


def test_cheapest_strategy_that_meets_the_slo_and_by_how_much():
    result = {"runs": [_run("big", 0.999, 200.0), _run("small", 0.995, 150.0),
                       _run("tiny", 0.5, 10.0)]}
    line = verdict([result], SLO, 0.99)
    assert line.startswith("verdict: small meets") and "$50.00 (25 %) below big" in line


def test_none_meets_names_the_best_and_why():
    result = {"runs": [_run("fixed-16", 0.964, 300.0, tpot=0.25), _run("hpa", 0.5, 100.0,
                                                                        dropped=40)]}
    line = verdict([result], SLO, 0.99)
    assert "no strategy meets" in line and "fixed-16" in line and "96.4 %" in line
    assert "TPOT p99 is 0.250 s" in line


def test_a_seed_that_fails_disqualifies():
    one = {"runs": [_run("a", 0.995, 100.0), _run("b", 0.999, 120.0)]}
    two = {"runs": [_run("a", 0.97, 100.0), _run("b", 0.995, 120.0)]}
    assert verdict([one, two], SLO, 0.99).startswith("verdict: b meets the 99.0 % SLO on all 2")
    assert failing_gate([one, two], 0.99) is None
    assert failing_gate([one, two], 0.999) is not None
