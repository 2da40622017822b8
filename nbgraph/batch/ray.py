"""The Ray executor: a batch's inputs run as :func:`run_job` calls in Ray worker processes.

``g.batch(inputs, checkpointer=RedisCheckpointer(url), executor="ray")`` (or
``executor=RayExecutor(...)``) sends each input to a pool of async Ray actors, which
run many inputs at once each, as the local executor does on one loop. Each call
returns when its input's row is back, so the batch's progress (and the notebook
view on it) moves as rows arrive.

What travels: the graph as Ray ships code (cloudpickle, once per version of the
graph, without its store or listeners); the store as its Redis connection options,
rebuilt once per worker; the input as JSON, like the state in the checkpoints; the
row and the edges back, which are plain data. A worker killed mid-run (SIGKILL, a
lost node) is restarted by Ray, which sends its calls again: :func:`run_job` then
continues each thread from its last checkpoint (a dead holder's lease on the same
host is freed at once), so every input ends once.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import TYPE_CHECKING, Any

from ..names import new_id
from ._executor import Finished, Job, run_job

if TYPE_CHECKING:
    from ..checkpoint.base import Checkpointer

__all__ = ["RayExecutor"]

try:
    import ray
    import ray.cloudpickle as cloudpickle  # (its dumps_debug is dumps with a clearer error, in every Ray release)
except ImportError as exc:  # (executor="ray" turns this into an error naming the extra)
    raise ImportError("the Ray executor needs ray: pip install 'nbgraph[ray]'") from exc


_POOLS: dict[tuple[Any, ...], tuple[list[Any], list[int]]] = {}
"""The actors of each set of executor options, and how many inputs each runs now."""
_LOCK = threading.Lock()


class RayExecutor:
    """Runs a batch's inputs on a Ray cluster, in a pool of async actors.

    Args:
        address: the cluster to join when Ray is not initialised yet (``"auto"``,
            ``"ray://head:10001"``); None starts a local Ray runtime without a
            dashboard. When Ray is already initialised (``ray.init(...)`` in the
            notebook), that connection is used and ``address`` is ignored.
        actors: how many worker actors (None: one per CPU the cluster has).
        per_actor: the most inputs one actor runs at once (on its event loop); the
            batch's ``concurrency`` bounds the total.
        retries: how many times Ray restarts an actor whose process died and sends
            its calls again; each call continues its thread from its checkpoint.
        num_cpus: CPUs each actor reserves while it lives (None: Ray's default for actors, which
            needs a CPU to place one but holds none while it runs, so pools of several executors
            fit side by side; a run that waits on a model needs no CPU of its own).
        resources: other Ray resources each actor reserves (``{"GPU": 1}``, custom ones).
        init: more keyword arguments for ``ray.init`` when this executor calls it.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        actors: int | None = None,
        per_actor: int = 1000,
        retries: int = 3,
        num_cpus: float | None = None,
        resources: dict[str, float] | None = None,
        init: dict[str, Any] | None = None,
    ) -> None:
        if actors is not None and (not isinstance(actors, int) or actors < 1):
            raise ValueError(f"actors must be a whole number, at least 1, or None (one per CPU), got {actors!r}")
        if not isinstance(per_actor, int) or per_actor < 1:
            raise ValueError(f"per_actor must be a whole number of inputs, at least 1, got {per_actor!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a whole number, 0 or more, got {retries!r}")
        self.address = address
        self.actors = actors
        self.per_actor = per_actor
        self.retries = retries
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self._init = dict(init or {})
        self._pool: list[Any] = []
        self._load: list[int] = []
        self._graph: tuple[Any, Any, str, bytes] | None = None  # (graph, its plan, key, pickled)
        self._store: tuple[Any, str, bytes] | None = None  # (store, key, how to rebuild it, pickled)

    # -- the batch's side ---------------------------------------------------------------

    def check(self, graph: Any, checkpointer: Checkpointer | None) -> None:
        """Refuse a store the workers cannot reach (none, memory, SQLite): every worker must be able to
        read and continue any thread."""
        _store_spec(checkpointer)

    async def run(self, graph: Any, job: Job) -> Finished:
        """Run ``job`` in an actor of the pool and return its row when it is back."""
        actor, index = self._pick()
        graph_key, graph_blob = self._shipped(graph)
        store_key, store_blob = self._store_of(job.checkpointer)
        shipped = job._replace(input=_to_json(job.input), checkpointer=None)
        # (The graph and the store go pickled once, as bytes each call carries and the actor unpickles
        # once: an object ref in the arguments would make every call a borrower Ray keeps count of.)
        ref = actor.run.remote(graph_key, graph_blob, store_key, store_blob, shipped)
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref)  # the run in the actor ends aborted, its checkpoints kept
            raise
        finally:
            if index < len(self._load):
                self._load[index] -= 1

    def shutdown(self) -> None:
        """Stop this executor's actors (a later batch starts new ones)."""
        with _LOCK:
            pool, self._pool, self._load = self._pool, [], []
            for key, (held, _) in list(_POOLS.items()):
                if held is pool:
                    del _POOLS[key]
        for actor in pool:
            ray.kill(actor)

    def _pick(self) -> tuple[Any, int]:
        if not self._pool:
            self._start()
        load = self._load
        index = min(range(len(load)), key=load.__getitem__)
        load[index] += 1
        return self._pool[index], index

    def _start(self) -> None:
        with _LOCK:
            if self._pool:
                return
            if not ray.is_initialized():
                options = dict(self._init)
                if self.address is None:
                    options.setdefault("include_dashboard", False)
                ray.init(address=self.address, **options)
            # Executors with the same options share their actors (executor="ray" makes one per batch),
            # for as long as this connection to Ray lasts. A runtime started again numbers its jobs
            # from the start: its node, started anew, tells it from the one whose actors are gone.
            context = ray.get_runtime_context()
            key = (
                context.get_node_id(),
                context.get_job_id(),
                self.actors,
                self.per_actor,
                self.retries,
                self.num_cpus,
                tuple(sorted(self.resources.items())),
            )
            shared = _POOLS.get(key)
            if shared is not None:
                self._pool, self._load = shared
                return
            count = self.actors
            if count is None:
                count = max(1, int(ray.cluster_resources().get("CPU", 1) // max(self.num_cpus or 1, 1e-9)))
            reserve = {} if self.num_cpus is None else {"num_cpus": self.num_cpus}
            actor = ray.remote(_Worker).options(
                **reserve,
                resources=self.resources or None,
                max_concurrency=self.per_actor,
                max_restarts=self.retries,
                max_task_retries=self.retries,
            )
            self._pool = [actor.remote() for _ in range(count)]
            self._load = [0] * count
            _POOLS[key] = (self._pool, self._load)

    def _shipped(self, graph: Any) -> tuple[str, bytes]:
        """The graph pickled as Ray ships code, once per version of it (a changed graph compiles anew)."""
        plan = graph.compile()
        held = self._graph
        if held is not None and held[0] is graph and held[1] is plan:
            return held[2], held[3]
        bare = copy.copy(graph)
        # The store travels apart (a Redis client does not pickle); listeners belong to this process.
        for name, value in (("checkpointer", None), ("_listeners", []), ("_plan", None)):
            object.__setattr__(bare, name, value)
        key = new_id(size=12)
        self._graph = (graph, plan, key, cloudpickle.dumps_debug(bare))
        return key, self._graph[3]

    def _store_of(self, store: Any) -> tuple[str, bytes]:
        held = self._store
        if held is not None and held[0] is store:
            return held[1], held[2]
        self._store = (store, new_id(size=12), cloudpickle.dumps_debug(_store_spec(store)))
        return self._store[1], self._store[2]

    def __repr__(self) -> str:
        where = self.address or ("the running Ray" if ray.is_initialized() else "a local Ray runtime")
        actors = "one per CPU" if self.actors is None else self.actors
        return f"RayExecutor({where}, actors={actors}, per_actor={self.per_actor}, retries={self.retries})"


# -- the worker's side -------------------------------------------------------------------


class _Worker:
    """A Ray actor that runs inputs on its own event loop, with the graphs and stores it was sent."""

    def __init__(self) -> None:
        self._graphs: dict[str, Any] = {}
        self._stores: dict[str, Any] = {}

    async def run(self, graph_key: str, graph_blob: bytes, store_key: str, store_blob: bytes, job: Job) -> Finished:
        graph = self._graphs.get(graph_key)
        if graph is None:
            graph = self._graphs[graph_key] = cloudpickle.loads(graph_blob)
            if len(self._graphs) > 8:  # (keep the latest versions a long-lived actor was sent)
                del self._graphs[next(iter(self._graphs))]
        store = self._stores.get(store_key)
        if store is None:
            store = self._stores[store_key] = _rebuild_store(cloudpickle.loads(store_blob))
        done = await run_job(graph, job._replace(input=json.loads(job.input), checkpointer=store))
        return done._replace(result=None)  # the row and edges go back; the state stays in the store


# -- what travels --------------------------------------------------------------------------


def _to_json(value: Any) -> str:
    from pydantic_core import to_jsonable_python

    return json.dumps(to_jsonable_python(value))


def _store_spec(store: Any) -> tuple[str, Any]:
    """How a worker rebuilds ``store``: a RedisCheckpointer's connection options, or the store itself
    (a PostgresCheckpointer pickles as its DSN and options, and each worker opens its own pool)."""
    from ..checkpoint.memory import MemoryCheckpointer
    from ..checkpoint.redis import RedisCheckpointer
    from ..checkpoint.sqlite import SQLiteCheckpointer

    fix = (
        "pass checkpointer=RedisCheckpointer('redis://host:6379/0') or PostgresCheckpointer('postgresql://host/db') "
        "with a server every worker can reach (pip install 'nbgraph[ray]' installs redis, 'nbgraph[postgres]' psycopg)"
    )
    if store is None:
        raise ValueError(
            f"executor='ray' needs a checkpointer: a worker that dies mid-run is retried by Ray and continues "
            f"from its checkpoint, on any worker; {fix}"
        )
    if isinstance(store, MemoryCheckpointer):
        raise ValueError(
            f"executor='ray' cannot use a MemoryCheckpointer: it lives in this process, and Ray's workers are "
            f"other processes; {fix}"
        )
    if isinstance(store, SQLiteCheckpointer):
        raise ValueError(
            f"executor='ray' cannot use a SQLiteCheckpointer ({store.name}): Ray's workers may run on other "
            f"machines, which cannot reach a local file; {fix}"
        )
    if isinstance(store, RedisCheckpointer):
        pool = store._redis.connection_pool
        return "redis", {
            "connection_class": pool.connection_class,
            "connection": _portable(pool.connection_kwargs),
            "ttl": store.ttl,
            "lease_ttl": store.lease_ttl,
            "prefix": store.prefix,
        }
    return "object", store  # another store: it travels as it is, and must pickle


def _portable(options: dict[str, Any]) -> dict[str, Any]:
    """The connection options that can travel (host, port, password, timeouts, retry policy); the pool
    rebuilds the rest (its handlers hold locks)."""
    kept = {}
    for name, value in options.items():
        try:
            cloudpickle.dumps_debug(value)
        except Exception:
            continue
        kept[name] = value
    return kept


def _rebuild_store(spec: tuple[str, Any]) -> Any:
    kind, value = spec
    if kind == "object":
        return value
    import redis

    from ..checkpoint.redis import RedisCheckpointer

    pool = redis.ConnectionPool(connection_class=value["connection_class"], **value["connection"])
    return RedisCheckpointer(
        client=redis.Redis(connection_pool=pool),
        ttl=value["ttl"],
        lease_ttl=value["lease_ttl"],
        prefix=value["prefix"],
    )
