"""Tests of the fleet model (bench/sizing/fleet_model.py): its queueing pieces against closed
forms, its regimes (actor-bound, inference-bound, learner-bound, shared cores) and its errors."""
import json
import math
import pathlib
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
PROFILES = HERE / "profiles"
sys.path.insert(0, str(HERE))
import fleet_model as m  # noqa: E402


def base(**changes):
    profile = {
        "selfplay": {"moves_per_game": 10, "evals_per_move": 10, "actor_cpu_s_per_eval": 10e-6},
        "actors": {"processes": 1, "workers": 1, "games_per_worker": 8, "requests_in_flight": 2,
                   "leaves_per_game": 4},
        "inference": {"servers": 1, "forward": [[1, 100e-6], [1024, 1124e-6]],
                      "max_batch": 1024},
        "learner": {"step_s": 0.0},
    }
    return m.scale(profile, **changes)


class QueueingPieces(unittest.TestCase):
    def test_one_customer_cycles_through_both_stations_in_turn(self):
        self.assertAlmostEqual(m.worker_cycles_per_s(1, 0.002, 0.003), 1 / 0.005)

    def test_many_customers_approach_the_queues_capacity(self):
        # D = 1 ms, Z = 1 ms: the bound is min(1/D, N/(D+Z)); MVA stays below it, near it.
        x = m.worker_cycles_per_s(50, 0.001, 0.001)
        self.assertLessEqual(x, 1000)
        self.assertGreater(x, 990)
        two = m.worker_cycles_per_s(2, 0.001, 0.001)  # exact MVA for N = 2: 2 / (D(1+1/2) + D + Z)
        self.assertAlmostEqual(two, 2 / (0.001 * 1.5 + 0.001), places=6)

    def test_forward_time_interpolates_and_extrapolates_linearly(self):
        table = [[1, 1.0], [3, 2.0], [5, 4.0]]
        self.assertAlmostEqual(m.forward_time(table, 2), 1.5)
        self.assertAlmostEqual(m.forward_time(table, 4), 3.0)
        self.assertAlmostEqual(m.forward_time(table, 7), 6.0)
        self.assertAlmostEqual(m.forward_time(table, 0.5), 0.75)


class Regimes(unittest.TestCase):
    def test_few_rows_in_flight_bound_self_play_by_latency(self):
        out = m.predict(base())
        self.assertEqual(out["bottleneck"], "actors' rows in flight")
        # 2 groups of 16 rows; one request at a time in the server; the rate is the MVA's.
        self.assertEqual(out["rows_per_request"], 16)
        self.assertLess(out["utilization"]["actor CPU"], 0.95)
        self.assertAlmostEqual(out["games_per_s"] * 100, out["evaluations_per_s"])

    def test_more_games_per_worker_saturate_the_actor_core(self):
        out = m.predict(base(**{"actors.games_per_worker": 4096, "actors.requests_in_flight": 8}))
        self.assertEqual(out["bottleneck"], "actor CPU")
        self.assertAlmostEqual(out["evaluations_per_s"], 1 / 10e-6, delta=0.05 / 10e-6)

    def test_many_actors_saturate_one_server_and_a_second_doubles_the_fleet(self):
        many = {"actors.processes": 400, "actors.games_per_worker": 256}
        one = m.predict(base(**many))
        self.assertEqual(one["bottleneck"], "inference")
        capacity = 1024 / 1124e-6
        self.assertAlmostEqual(one["evaluations_per_s"], capacity, delta=0.01 * capacity)
        self.assertGreater(one["server_duty"], 0.99)
        two = m.predict(base(**many, **{"inference.servers": 2}))
        self.assertAlmostEqual(two["evaluations_per_s"] / one["evaluations_per_s"], 2.0, delta=0.02)

    def test_throughput_grows_with_actors_until_a_bottleneck(self):
        rates = [m.predict(base(**{"actors.processes": n}))["games_per_s"]
                 for n in (1, 2, 4, 8, 64, 1024, 4096)]
        self.assertEqual(rates, sorted(rates))
        self.assertLess(rates[-1] / rates[-2], 1.01)

    def test_the_server_batch_is_the_rows_that_arrive_during_one_pass(self):
        out = m.predict(base(**{"actors.processes": 64, "actors.games_per_worker": 64}))
        t = m.forward_time([[1, 100e-6], [1024, 1124e-6]], out["server_batch"])
        lam = out["server_evaluations_per_s"]
        if out["server_batch"] > out["rows_per_request"]:
            self.assertAlmostEqual(out["server_batch"], lam * t, delta=0.01 * out["server_batch"])

    def test_a_rate_limited_learner_caps_self_play(self):
        p = base(**{"actors.processes": 64, "actors.games_per_worker": 64,
                    "learner.step_s": 0.01, "learner.batch": 100,
                    "learner.samples_per_insert": 4.0})
        out = m.predict(p)
        self.assertEqual(out["bottleneck"], "learner")
        # 100 steps/s x 100 samples / 4 per position = 2,500 positions/s.
        self.assertAlmostEqual(out["positions_per_s"], 2500, delta=25)
        self.assertAlmostEqual(out["learner_duty"], 1.0, delta=0.01)

    def test_a_free_running_learner_takes_a_share_of_a_shared_box(self):
        busy = base(**{"actors.games_per_worker": 4096, "actors.requests_in_flight": 8,
                       "box.cores": 1})
        alone = m.predict(busy)
        self.assertAlmostEqual(alone["evaluations_per_s"], 1 / 10e-6, delta=0.05 / 10e-6)
        shared = m.predict(m.scale(busy, **{"learner.step_s": 0.01, "learner.threads": 1,
                                            "learner.mode": "free"}))
        # Two runnable threads on one core: each gets half.
        self.assertEqual(shared["bottleneck"], "shared cores")
        self.assertAlmostEqual(shared["sigma"], 2.0, delta=0.05)
        self.assertAlmostEqual(shared["evaluations_per_s"] / alone["evaluations_per_s"], 0.5,
                               delta=0.03)
        self.assertAlmostEqual(shared["utilization"]["shared cores"], 1.0, places=3)

    def test_a_cpu_forward_pass_on_a_shared_box_costs_self_play_its_cycles(self):
        p = base(**{"actors.games_per_worker": 4096, "actors.requests_in_flight": 8,
                    "box.cores": 1, "inference.forward_on_cpu": True,
                    "inference.forward": [[1, 10e-6], [1024, 10.24e-3]]})
        out = m.predict(p)
        # Every row costs 10 us of search and 10 us of forward pass on the one core.
        self.assertAlmostEqual(out["evaluations_per_s"], 1 / 20e-6, delta=0.03 / 20e-6)

    def test_the_fixed_batcher_waits_for_a_full_batch_when_idle(self):
        tuned = m.predict(base())
        fixed = m.predict(base(**{"inference.batching": "fixed", "inference.max_delay_s": 0.002}))
        self.assertGreater(fixed["latency_s"], tuned["latency_s"] + 0.0015)
        self.assertLess(fixed["games_per_s"], tuned["games_per_s"])


class Profiles(unittest.TestCase):
    """The measured profiles in profiles/ and the sizing table stay usable by the model."""

    def test_every_whole_profile_predicts(self):
        whole = [f for f in PROFILES.glob("*.json")
                 if "forward" in json.loads(f.read_text()).get("inference", {})]
        self.assertGreaterEqual(len(whole), 1)
        for f in whole:
            out = m.predict(json.loads(f.read_text()))
            self.assertGreater(out["games_per_s"], 0, f.name)

    def test_the_sizing_table_reaches_ninety_percent_of_every_fleets_capacity(self):
        import sizing_table
        assumed = json.loads((PROFILES / "gpu-h100-assumed.json").read_text())
        rows = sizing_table.rows(assumed)
        self.assertEqual(len(rows), 4 * len(assumed["networks"]))
        for r in rows:
            _, profile, _ = sizing_table.gpu_profile(
                assumed, next(n for n in assumed["networks"]
                              if f"{n['game']} {n['blocks']}x{n['filters']}" == r["network"]),
                r["gpus"])
            profile["replay"]["shards"] = r["replay_shards"]
            self.assertGreaterEqual(r["evaluations_per_s"],
                                    0.9 * sizing_table.capacity(profile) * 0.999, r)
        # Twice the GPUs take about twice the actor cores.
        by_net = {}
        for r in rows:
            by_net.setdefault(r["network"], {})[r["gpus"]] = r["actor_cores"]
        for cores in by_net.values():
            self.assertAlmostEqual(cores[8] / cores[4], 2.0, delta=0.3)

    def test_the_h100_fit_follows_the_measured_curve(self):
        import sizing_table
        launch, slope, worst = sizing_table.fit_h100()
        self.assertGreater(launch, 0)
        self.assertGreater(slope, 0)
        self.assertLess(worst, 0.15)


class Errors(unittest.TestCase):
    def assertModelError(self, profile, text):
        with self.assertRaises(m.ModelError) as raised:
            m.predict(profile)
        self.assertIn(text, str(raised.exception))

    def test_missing_and_bad_fields_are_named(self):
        p = base()
        del p["selfplay"]["actor_cpu_s_per_eval"]
        self.assertModelError(p, "selfplay.actor_cpu_s_per_eval")
        self.assertModelError(base(**{"actors.workers": 0}), "actors.workers")
        self.assertModelError(base(**{"actors.workers": 1.5}), "whole number")
        self.assertModelError(base(**{"inference.forward": [[4, 1e-3], [2, 2e-3]]}),
                              "batches increasing")
        self.assertModelError(base(**{"inference.batching": "eager"}), "tuned or fixed")
        self.assertModelError(base(**{"inference.wire_s": math.nan}), "inference.wire_s")
        self.assertModelError(base(**{"learner.mode": "lazy"}), "rate_limited or free")

    def test_unknown_sections_and_fields_are_refused(self):
        self.assertModelError(base(**{"gpu.count": 2}), "unknown section 'gpu'")
        self.assertModelError(base(**{"actors.threads": 2}), "unknown field 'actors.threads'")


if __name__ == "__main__":
    unittest.main()
