"""The council's memory term: fixed-share reputations over the context weigh each member's influence."""

import hashlib
import itertools
import math

import numpy as np
import pytest

from eqlm.council import MEMORY_DEFAULTS, CouncilGenerator, Kinetic, equilibrium, log_softmax
from eqlm.council_memory import fixed_share_mixture, fixed_share_reputations, fixed_share_update
from eqlm.generation import GenerationRequest, Generator

# Today's council (commit 680e7cc, before the memory term) on the tiny members of seeds 1 and 2: the token ids, and
# SHA-256 digests of the float64 bytes of the logprobs rows, the influence weights and the echoed prompt's rows.
# Recorded with that commit's code on the portal's CPU build of onnxruntime. The members' float32 kernels round
# differently on different CPUs (the same wheel picks other MLAS kernels), so there is one record per machine kind
# it was recorded on, each recorded from that commit, never edited by hand; a run must match one record in full.
BEFORE_MEMORY_RECORDS = {
    "recorded first (the earlier development machine)": {
        "greedy_defaults": {
            "tokens": [103] * 12,
            "logprobs": "25d27a04c61a79202575879a071d2117fac1b3bf39ea1dfee02f69b8ec60d696",
            "weights": "2c2ced688df81709627ab496bce7fd1b9e916f047e9f8e825f5937402e5d84ed",
        },
        "sampled_beta8_tau": {
            "tokens": [159, 228, 198, 58, 76, 222, 1, 210, 204, 119, 77, 72],
            "logprobs": "a09f92d9c7978b70aeac084385260ab1db61067c15b1ce1d380683e092e0ce84",
            "weights": "f3da7ddb43e4a1d6d1998017e4a94de285f3ed287651d396d08f3c49887e08e6",
        },
        "scoring_echo": {
            "tokens": [115] * 4,
            "logprobs": "f86cbc1ff301ef065e09cf1dc23d07c6982390fb5b3a134a052f521903b2e817",
            "weights": "66527ad66998fdf359b2c9b49df94afcfe2aff87086f2779c9fb92c367169ab0",
            "prompt_logprobs": "c5f2508e74b1908590894a914ed0f9e830c4c34e2e26a3c6e6b7149356b72503",
            "prompt_weights": "00ece0abfb106c4c068a2707964073a85773b226ff838952ef9507a9843c0c08",
        },
    },
    "AMD EPYC with AVX-512 (recorded from 680e7cc in the next session)": {
        "greedy_defaults": {
            "tokens": [103] * 12,
            "logprobs": "bbe17afdcdf89eb4308a4d241661ae5214e12fb380acc9ad77f9d0a025181330",
            "weights": "cde068099aafed43543100644dbe9ff342e7a41a9ad53cdd279406bb522d074d",
        },
        "sampled_beta8_tau": {
            "tokens": [159, 228, 198, 58, 76, 222, 1, 210, 204, 119, 77, 72],
            "logprobs": "fd2ec7090491d25abe80473e46c4a78e238a875d691d261792e8590fca31dadc",
            "weights": "bd36f1b08722f620afcc1ac15c150195f91c47c1fcd9b91fc0d60796f6fe3776",
        },
        "scoring_echo": {
            "tokens": [115] * 4,
            "logprobs": "bdab24e4722381b829bb2a1ddf147d5db272b651b5cb771ea649a4ab8f423b1f",
            "weights": "195c49222a4e9e702f324a849709b4c54e202d35cccd99d7b11c2f5fecbc413f",
            "prompt_logprobs": "6532ba5af1f633557204c2f33a0eb1567074a4e9965fc11f232953d98d447e1c",
            "prompt_weights": "2a38ab36ad1d33961971937687f7828da35ace51cd8fdb3c7ffb95d797f6619e",
        },
    },
}
CASES = {
    "greedy_defaults": ({}, {"prompt": "In the beginning", "max_tokens": 12, "temperature": 0}),
    "sampled_beta8_tau": (
        {"beta": 8, "tau": 0.5, "reference": 1},
        {"prompt": "And God said", "max_tokens": 12, "temperature": 1.0, "seed": 7},
    ),
    "scoring_echo": (
        {},
        {"prompt": "Let there be light: and there was", "max_tokens": 4, "temperature": 0, "echo_logprobs": True},
    ),
}


def digest(values) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(values, dtype=np.float64)).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def two_models(tiny_onnx_export):
    return Generator(tiny_onnx_export(1)), Generator(tiny_onnx_export(2))


def council_run(generator, **request):
    stream = generator.stream(GenerationRequest(depth=6, logprobs=True, **request))
    events = list(stream)
    return events, stream.stats


# --- memory "none" is today's council -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    "memory",
    [
        {},
        {"memory": "none"},
        {"memory": "none", "share": 0.5},
        {"memory": "none", "pool": "geometric", "learning_rate": 0.5},
    ],
)
def test_memory_none_generates_and_scores_bit_for_bit_as_before(two_models, case, memory):
    controls, request = CASES[case]
    events, stats = council_run(CouncilGenerator(list(two_models), Kinetic(**controls, **memory)), **request)
    found = {"tokens": [e.token_id for e in events], "logprobs": digest(np.stack([e.logprobs for e in events]))}
    found["weights"] = digest([entry.weights for entry in stats.entries])
    if request.get("echo_logprobs"):
        found["prompt_logprobs"] = digest(stats.prompt_logprobs)
        found["prompt_weights"] = digest(stats.prompt_weights)
        assert stats.prompt_reputations is None
    records = [record[case] for record in BEFORE_MEMORY_RECORDS.values()]
    assert found in records, f"matches no record from 680e7cc: {found}"
    assert all(entry.reputations is None for entry in stats.entries)
    assert all(entry.as_json(["a", "b"])["reputations"] is None for entry in stats.entries)


# --- the kinetic fields ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"memory": "sometimes"}, "kinetic.memory"),
        ({"memory": None}, "kinetic.memory"),
        ({"share": -0.01}, "kinetic.share"),
        ({"share": 1.0}, "kinetic.share"),
        ({"share": float("nan")}, "kinetic.share"),
        ({"share": "0.1"}, "kinetic.share"),
        ({"share": True}, "kinetic.share"),
    ],
)
def test_memory_and_share_are_range_checked_by_name(change, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        Kinetic(**{"memory": "fixed_share", **change}).validate(members=2)


def test_a_share_of_zero_and_both_memories_are_accepted():
    for memory in ("none", "fixed_share"):
        Kinetic(memory=memory, share=0.0).validate(members=2)
        Kinetic(memory=memory, share=0.999).validate(members=3)


@pytest.mark.parametrize("name", ["betta", "members", "Memory", ""])
def test_an_unknown_kinetic_field_is_refused_naming_it(name):
    with pytest.raises(ValueError, match=rf"kinetic\.{name} is not a control"):
        Kinetic.from_dict({"beta": 1.0, name: 1})


def test_from_dict_takes_every_control_by_its_name():
    controls = {"beta": 0.5, "tau": 0.1, "eta": 0.7, "max_iter": 9, "tol": 1e-4, "reference": 1}
    kinetic = Kinetic.from_dict({**controls, "memory": "fixed_share", "share": 0.02})
    assert kinetic == Kinetic(**controls, memory="fixed_share", share=0.02)
    assert Kinetic.from_dict({"memory": "none"}) == Kinetic()


# --- fixed share ----------------------------------------------------------------------------------------------------


def test_share_zero_is_bayes_rule_on_the_bytes_seen():
    rng = np.random.default_rng(0)
    seen = np.log(rng.uniform(0.01, 1, size=(20, 3)))
    log_pi = fixed_share_reputations(seen, share=0.0)
    expected = seen.cumsum(axis=0) - np.log(np.exp(seen.cumsum(axis=0)).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(log_pi[1:], expected, atol=1e-12)
    np.testing.assert_allclose(log_pi[0], np.full(3, -math.log(3)))


def test_the_fixed_share_mixture_is_the_bayesian_mixture_over_switching_sequences():
    """Herbster & Warmuth's prior on expert sequences: start uniform, stay with 1 - share, move to each other member
    with share / (M - 1). Summed over every sequence, the text's probability is the mixture's product of predictions.
    """
    rng = np.random.default_rng(1)
    members, length, share = 3, 6, 0.2
    p = rng.dirichlet(np.ones(members), size=length)  # p[t, i]: member i's probability of byte t
    total = 0.0
    for path in itertools.product(range(members), repeat=length):
        prior = 1 / members
        for prev, cur in itertools.pairwise(path):
            prior *= (1 - share) if cur == prev else share / (members - 1)
        total += prior * np.prod([p[t, i] for t, i in enumerate(path)])
    log_pi = fixed_share_reputations(np.log(p), share)
    mixture = np.log((np.exp(log_pi[:-1]) * p).sum(axis=1)).sum()
    assert mixture == pytest.approx(math.log(total), abs=1e-12)
    assert np.exp(log_pi).sum(axis=1) == pytest.approx(np.ones(length + 1))


def test_a_share_lets_the_reputation_switch_within_a_few_bytes():
    better_first = np.tile([math.log(0.5), math.log(0.05)], (200, 1))
    then_second = better_first[:, ::-1]
    seen = np.concatenate([better_first, then_second])
    stuck = np.exp(fixed_share_reputations(seen, share=0.0))
    switching = np.exp(fixed_share_reputations(seen, share=0.01))
    assert switching[200, 0] > 0.98 and switching[200, 1] >= 0.01 * 0.99  # never below the share (of 1 - v)
    assert switching[210, 1] > 0.98  # switched within ten bytes, to its own steady state
    assert stuck[210, 0] > 0.99  # Bayes alone is still stuck on the first member


def test_fixed_share_mixture_is_the_reputation_weighted_mean_of_the_distributions():
    lp = log_softmax(np.random.default_rng(2).normal(size=(4, 2, 7)))
    log_pi = np.log(np.array([[0.3, 0.7]] * 4))
    expected = np.log(0.3 * np.exp(lp[:, 0]) + 0.7 * np.exp(lp[:, 1]))
    np.testing.assert_allclose(fixed_share_mixture(lp, log_pi), expected, atol=1e-12)
    posterior = np.array([0.3, 0.7]) * np.exp(lp[0, :, 3])
    posterior /= posterior.sum()
    expected_pi = 0.9 * posterior + 0.1 * posterior[::-1]  # two members: the share goes to the other one
    np.testing.assert_allclose(fixed_share_update(log_pi[0], lp[0, :, 3], 0.1), np.log(expected_pi), atol=1e-12)


# --- the game with memory -------------------------------------------------------------------------------------------


def test_with_beta_zero_the_weights_are_the_reputations_and_y_their_geometric_pool():
    lp = log_softmax(np.random.default_rng(3).normal(size=(5, 2, 11)))
    log_pi = np.log(np.array([[0.2, 0.8]] * 5))
    eq = equilibrium(lp, beta=0.0, log_reputation=log_pi, tol=1e-14, max_iter=256)
    np.testing.assert_allclose(eq.weights, np.exp(log_pi), atol=1e-12)
    pool = 0.2 * lp[:, 0] + 0.8 * lp[:, 1]
    np.testing.assert_allclose(eq.log_y, pool - np.log(np.exp(pool).sum(-1, keepdims=True)), atol=1e-10)


def test_the_fixed_point_satisfies_the_memory_weighted_influence_equation():
    lp = log_softmax(3 * np.random.default_rng(4).normal(size=(6, 3, 13)))
    log_pi = np.log(np.random.default_rng(5).dirichlet(np.ones(3), size=6))
    eq = equilibrium(lp, beta=2.0, log_reputation=log_pi, tol=1e-13, max_iter=256)
    assert eq.converged.all()
    score = 2.0 * np.einsum("tv,tmv->tm", eq.y, lp) + log_pi
    w = np.exp(score - score.max(-1, keepdims=True))
    np.testing.assert_allclose(eq.weights, w / w.sum(-1, keepdims=True), atol=1e-9)
    pool = np.einsum("tm,tmv->tv", eq.weights, lp)
    np.testing.assert_allclose(eq.log_y, pool - np.log(np.exp(pool).sum(-1, keepdims=True)), atol=1e-7)


def test_a_sure_reputation_hands_the_council_to_that_member():
    lp = log_softmax(np.random.default_rng(6).normal(size=(3, 2, 9)))
    log_pi = np.log(np.array([[1 - 1e-12, 1e-12]] * 3))
    eq = equilibrium(lp, log_reputation=log_pi, tol=1e-13, max_iter=256)
    np.testing.assert_allclose(eq.log_y, lp[:, 0], atol=1e-9)


# --- decoding with memory -------------------------------------------------------------------------------------------

MEMORY = {"memory": "fixed_share", "share": 0.05}


def members_log_probs(models, ids: list[int]) -> np.ndarray:
    """[T, M, V]: each member's log-probabilities at every position of ids, from one batched solve."""
    batch = np.asarray([ids])
    return np.stack([log_softmax(g.model.full_solve(batch, [6])[6][0].astype(np.float64)) for g in models], axis=1)


def test_every_token_carries_the_reputations_beside_the_weights(two_models):
    events, stats = council_run(CouncilGenerator(list(two_models), Kinetic(**MEMORY)), prompt="In the", max_tokens=8)
    for entry in stats.entries:
        assert sum(entry.reputations) == pytest.approx(1) and min(entry.reputations) > 0
        shown = entry.as_json(["a", "b"])
        assert list(shown)[:2] == ["weights", "reputations"]
        assert shown["reputations"] == [round(p, 6) for p in entry.reputations]


def test_the_reputations_are_the_fixed_share_posterior_of_the_context_prompt_and_generated(two_models):
    prompt = "In the beginning God"
    events, stats = council_run(CouncilGenerator(list(two_models), Kinetic(**MEMORY)), prompt=prompt, max_tokens=6)
    ids = list(prompt.encode()) + [e.token_id for e in events]
    lp = members_log_probs(two_models, ids)
    seen = lp[np.arange(len(ids) - 1), :, ids[1:]]
    expected = np.exp(fixed_share_reputations(seen, MEMORY["share"]))
    start = len(prompt) - 1  # the first generated token is chosen at the prompt's last position
    got = np.array([entry.reputations for entry in stats.entries])
    np.testing.assert_allclose(got, expected[start : start + len(events)], atol=1e-5)


def test_scoring_runs_the_memory_over_the_text_as_generation_does(two_models):
    """Echoing prompt + completion scores the completion's bytes as generating it did: one decoder."""
    council = CouncilGenerator(list(two_models), Kinetic(**MEMORY, beta=1.0))
    prompt = "And God said, Let"
    events, generated = council_run(council, prompt=prompt, max_tokens=6, temperature=0)
    _, scored = council_run(
        council, prompt_ids=tuple(prompt.encode()) + tuple(e.token_id for e in events), prompt="", max_tokens=0,
        echo_logprobs=True,
    )  # fmt: skip
    start = len(prompt) - 1
    rows = scored.prompt_logprobs[start : start + len(events)]
    np.testing.assert_allclose(rows, np.stack([e.logprobs for e in events]), atol=1e-5)
    reputations = np.array([entry.reputations for entry in generated.entries])
    np.testing.assert_allclose(scored.prompt_reputations[start : start + len(events)], reputations, atol=1e-5)
    np.testing.assert_allclose(scored.prompt_weights[start : start + len(events)],
                               np.array([entry.weights for entry in generated.entries]), atol=1e-5)  # fmt: skip


def test_a_model_listed_twice_with_memory_decodes_and_scores_as_that_model_alone(two_models):
    a, _ = two_models
    request = {"prompt": "Let there be", "max_tokens": 6, "temperature": 0, "echo_logprobs": True}
    alone, alone_stats = council_run(a, **request)
    twice, stats = council_run(CouncilGenerator([a, a], Kinetic(**MEMORY)), **request)
    assert [e.token_id for e in twice] == [e.token_id for e in alone]
    for own, game in zip(alone, twice, strict=True):
        np.testing.assert_allclose(game.logprobs, own.logprobs, atol=1e-9)
    np.testing.assert_allclose(stats.prompt_logprobs, alone_stats.prompt_logprobs, atol=1e-9)
    assert all(entry.reputations == pytest.approx([0.5, 0.5]) for entry in stats.entries)


def test_the_memory_defaults_are_valid_controls():
    kinetic = Kinetic.from_dict(MEMORY_DEFAULTS)
    kinetic.validate(members=2)
    assert kinetic.memory == "fixed_share" and kinetic.share == Kinetic().share
