"""The search behind `plan`: for one system, the layout (TP × PP), replicas and batch that meet a goal.

For each layout of a replica (fewest GPUs first, `layouts.layouts`), the largest batch that fits with headroom sets
the fewest replicas; then the fewest replicas that also meet the latency limits are found by bisection (more
replicas, smaller batches, lower TTFT and TPOT: monotone). The GPUs those replicas need are bought as the system is
sold (`SystemSpec.bought_gpus`: a smaller size of the server where one holds them, else whole servers), so the GPUs
they leave over hold more replicas. Among layouts the one with the fewest GPUs bought (a cost proxy), then the
most tokens/s, then the fewest GPUs used wins. Every time comes from `estimate` on the replica's GPUs, joined by
the link their group crosses, and the continuous-batching model of `serving`. An expert-parallel layout of g
attention groups serves as g engines stepping together: each group's steps at its ⌈batch ÷ g⌉ sequences, with
every MoE layer's dispatch and combine (`experts.moe_all_to_all_s`) added to its chunk and its decode step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from estimator.catalog.architecture import ModelSpec
from estimator.catalog.specs import GpuSpec
from estimator.catalog.systems import SystemSpec
from estimator.errors import EstimatorError
from estimator.inference.estimate import estimate
from estimator.inference.report import Report
from estimator.inference.workload import InferenceWorkload
from estimator.model.capacity import largest_true
from estimator.model.collectives import group_link, p2p_s
from estimator.model.experts import moe_all_to_all_s
from estimator.planning.layouts import (
    Layout,
    group_batch,
    layouts,
    max_replica_batch,
    replicas_filling,
    servers_for,
    stage_link,
)
from estimator.planning.serving import Overloaded, Serving, chunk_tokens, serve
from estimator.report import Frozen

GoalKind = Literal["concurrency", "throughput", "latency"]
# The most replicas of one layout a plan holds (4,096 replicas of one 8-GPU server is 32,768 GPUs, the size of the
# largest published training clusters, far past any serving fleet of one model). A goal that needs more is beyond
# any plan, said in one reason per system; the search's work never grows with the goal past it.
MAX_REPLICAS = 4096


class Settings(Frozen):
    """How `plan` searches: memory headroom, the step token budget, the largest cluster, TP across domains."""

    headroom: float = 0.10
    step_tokens: int = 8192
    max_nodes: int = 8
    allow_tp_across: bool = False


@dataclass(frozen=True)
class Point:
    """One evaluated configuration: layout, replicas, batch per replica, its serving figures and estimates."""

    layout: Layout
    replicas: int
    batch: int
    serving: Serving
    decode: Report | None  # estimate at the decode micro-batch (batch ÷ pp)
    chunk: Report  # estimate of one prefill chunk
    max_batch: int


@dataclass
class Search:
    """One system's search for one goal (caches every estimate it makes)."""

    model: ModelSpec
    system: SystemSpec
    gpu: GpuSpec
    workload: InferenceWorkload
    settings: Settings
    concurrency: int | None
    target_tokens_per_s: float | None
    max_ttft_s: float | None
    max_tpot_s: float | None
    _reports: dict[tuple[int, int, int, int, int], Report] = field(default_factory=dict)
    last_reason: str | None = None
    beyond: str | None = None  # why the goal is past MAX_REPLICAS in a layout that serves it: the reason to give

    def _estimate(self, tp: int, batch: int, prompt: int, output: int, groups: int = 1) -> Report:
        key = (tp, batch, prompt, output, groups)
        if key not in self._reports:
            w = self.workload.model_copy(update={"batch": batch, "tensor_parallel": tp, "prompt_tokens": prompt,
                                                 "output_tokens": output})
            self._reports[key] = estimate(self.model, self.gpu, w, system=self.system,  # times and fit only
                                          nodes=servers_for(self.system, tp), expert_groups=groups,
                                          capacity_searches=False)
        return self._reports[key]

    def _all_to_all_s(self, layout: Layout, tokens: int) -> float:
        """Every MoE layer's dispatch and combine when each attention group steps ``tokens`` tokens, spread over
        its TP ranks (sequence parallel), among the EP group (0 with one attention group)."""
        if layout.groups == 1 or self.model.arch is None:
            return 0.0
        link = group_link(self.system, layout.tp * layout.groups)
        return moe_all_to_all_s(self.model.arch, tokens / layout.tp, self.workload.activation_bytes_per_element,
                                layout.ep, link)

    def _hop_s(self, layout: Layout, tokens: int) -> float:
        """One activation hand-off between pipeline stages for ``tokens`` tokens (0 without pipeline)."""
        if layout.pp == 1:
            return 0.0
        hidden = self.model.arch.hidden_size if self.model.arch is not None else 0
        payload = tokens * hidden * self.workload.activation_bytes_per_element
        return (layout.pp - 1) * p2p_s(payload, stage_link(self.system, layout))

    def evaluate(self, layout: Layout, batch: int, max_batch: int) -> Point:
        """Serving figures of one replica of ``layout`` at ``batch`` (raises Overloaded when it cannot keep up)."""
        w = self.workload
        prompt, output, groups = w.prompt_tokens, w.output_tokens, layout.groups
        share = group_batch(layout, batch)  # one attention group's sequences
        c = chunk_tokens(self.settings.step_tokens, share, prompt)
        chunk = self._estimate(layout.tp, 1, c, 0, groups)
        chunk_s = chunk.time.prefill_s + self._hop_s(layout, c) + self._all_to_all_s(layout, c)
        decode = None
        decode_s = 0.0
        if output:
            micro = math.ceil(share / layout.pp)
            decode = self._estimate(layout.tp, micro, prompt, output, groups)
            rate = decode.time.tokens_per_s
            if not rate:
                raise Overloaded("the model generates no tokens (an encoder)")
            decode_s = micro / rate + self._hop_s(layout, micro) + self._all_to_all_s(layout, micro)
        serving = serve(batch=share, prompt=prompt, output=output, step_tokens=self.settings.step_tokens,
                        decode_step_s=decode_s, chunk_s=chunk_s)
        # g groups stepping together (fewer sequences than groups leave some idle: tokens/s counts those served)
        if groups > 1 and serving.time_per_output_token_s is not None:
            tpot = serving.time_per_output_token_s
            serving = replace(serving, batch=batch, tokens_per_s=batch / tpot, requests_per_s=batch / (output * tpot))
        return Point(layout, 1, batch, serving, decode, chunk, max_batch)

    def miss(self, point: Point) -> str | None:
        """Why ``point`` misses the latency limits (None when it meets them)."""
        s = point.serving
        if self.max_ttft_s is not None and s.time_to_first_token_s > self.max_ttft_s:
            return f"time to first token {s.time_to_first_token_s:.3g} s exceeds --max-ttft-s {self.max_ttft_s:g}"
        if self.max_tpot_s is not None and (s.time_per_output_token_s is None
                                            or s.time_per_output_token_s > self.max_tpot_s):
            shown = "none" if s.time_per_output_token_s is None else f"{s.time_per_output_token_s:.3g} s"
            return f"time per output token {shown} exceeds --max-tpot-s {self.max_tpot_s:g}"
        return None

    def _ok(self, layout: Layout, batch: int, max_batch: int) -> Point | None:
        try:
            point = self.evaluate(layout, batch, max_batch)
        except (Overloaded, EstimatorError) as error:
            self.last_reason = str(error)
            return None
        reason = self.miss(point)
        if reason is not None:
            self.last_reason = reason
            return None
        return point

    def _with_replicas(self, point: Point, replicas: int) -> Point:
        return Point(point.layout, replicas, point.batch, point.serving, point.decode, point.chunk, point.max_batch)

    def _concurrency(self, layout: Layout, max_batch: int, wanted: int) -> Point | None:
        """Fewest replicas holding ``wanted`` sequences that meet the limits, then as many as the GPUs bought hold."""
        first = math.ceil(wanted / max_batch)

        def fails(replicas: int) -> bool:
            return self._ok(layout, math.ceil(wanted / replicas), max_batch) is None

        top = min(wanted, MAX_REPLICAS)
        if first > top:
            self.beyond = (f"{wanted:,} sequences need {first:,} replicas of {layout.tp}×{layout.pp} GPUs (at "
                           f"most {max_batch:,} sequences each), more than the {MAX_REPLICAS:,} a plan holds")
            return None
        if fails(top):
            return None
        replicas = largest_true(fails, first, top) + 1
        replicas = min(replicas_filling(self.system, layout, replicas), wanted)
        point = self._ok(layout, math.ceil(wanted / replicas), max_batch)
        return None if point is None else self._with_replicas(point, replicas)

    def _throughput(self, layout: Layout, max_batch: int, target: float) -> Point | None:
        """Fewest replicas reaching ``target`` tokens/s within the limits, each at the smallest batch needed."""
        best = self._ok(layout, max_batch, max_batch)
        rate = None if best is None else best.serving.tokens_per_s
        if not rate:
            return None
        replicas = max(1, math.ceil(target / rate))
        if replicas > MAX_REPLICAS:  # the most a replica makes is at its largest batch: no plan reaches the target
            self.beyond = (f"{target:,.0f} tokens/s needs {replicas:,} replicas of {layout.tp}×{layout.pp} GPUs "
                           f"(at most {rate:,.0f} tokens/s each), more than the {MAX_REPLICAS:,} a plan holds")
            return None
        while True:  # the limits may want smaller batches: more replicas, doubled up to MAX_REPLICAS
            share = target / replicas

            def short(batch: int) -> bool:
                point = self._ok(layout, batch, max_batch)
                return point is None or (point.serving.tokens_per_s or 0.0) < share  # noqa: B023

            batch = min(largest_true(short, 1, max_batch) + 1, max_batch)
            point = self._ok(layout, batch, max_batch)
            if point is not None and (point.serving.tokens_per_s or 0.0) >= share:
                return self._with_replicas(point, replicas_filling(self.system, layout, replicas))
            replicas *= 2
            if replicas > MAX_REPLICAS:
                return None

    def _latency(self, layout: Layout, max_batch: int) -> Point | None:
        """The largest batch one replica serves within the limits, replicated over the GPUs bought for it."""
        batch = largest_true(lambda b: self._ok(layout, b, max_batch) is not None, 1, max_batch)
        if batch < 1:
            return None
        point = self._ok(layout, batch, max_batch)
        return None if point is None else self._with_replicas(point, replicas_filling(self.system, layout, 1))

    def solve(self, layout: Layout) -> Point | None:
        w = self.workload
        max_batch = max_replica_batch(self.model, self.gpu, w, layout, w.prompt_tokens, w.output_tokens,
                                      self.settings.headroom)
        if max_batch < 1:
            self.last_reason = (f"one sequence does not fit {layout.tp}×{layout.pp} GPUs with "
                                f"{self.settings.headroom:.0%} headroom")
            return None
        if self.concurrency is not None:
            return self._concurrency(layout, max_batch, self.concurrency)
        if self.target_tokens_per_s is not None:
            return self._throughput(layout, max_batch, self.target_tokens_per_s)
        return self._latency(layout, max_batch)

    def best(self) -> Point | None:
        """The winning layout: fewest GPUs bought, then the most tokens/s, then fewer GPUs used (layouts come
        fewest GPUs first: one that needs more than the best found cannot win)."""
        found: Point | None = None
        for layout in layouts(self.model, self.system, max_nodes=self.settings.max_nodes,
                              allow_tp_across=self.settings.allow_tp_across):
            if found is not None and self.system.bought_gpus(layout.gpus) > _key(self.system, found)[0]:
                break
            point = self.solve(layout)
            if point is not None and (found is None or _key(self.system, point) < _key(self.system, found)):
                found = point
        return found


def _key(system: SystemSpec, point: Point) -> tuple[int, float, int]:
    gpus = point.replicas * point.layout.gpus
    rate = (point.serving.tokens_per_s or 0.0) * point.replicas
    return system.bought_gpus(gpus), -rate, gpus
