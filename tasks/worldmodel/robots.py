"""The robots of the WestWorld task: which simulator envs, and each one's structure parsed from its own MJCF.

A robot's state token layout (the "variates" of the world model) is its MuJoCo state, not the env's observation
vector, so that every token belongs to exactly one joint and hence one body of the kinematic tree:

    obs = [qpos (without the root's horizontal translation for locomotion robots) | qvel],  act = the env's action

``parse_structure(model)`` reads the body tree (parents), the joints (type, body, qpos/qvel addresses) and the
actuators (transmission joint) of a ``mujoco.MjModel`` and maps every obs / action dimension to a body. The result
is a JSON-able `RobotStructure`, cached by `zoo_tasks.worldmodel.generate`.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import gymnasium as gym
import numpy as np

from zoo.errors import ConfigError


@dataclass(frozen=True)
class Robot:
    """One env of the zoo's robot set: ``env`` as `zoo_tasks.rl.envs.make_env` takes it."""

    name: str
    env: str
    action_repeat: int
    locomotion: bool  # drop the root's horizontal (x / y) position: it grows without bound


# Gymnasium's Hopper / Walker2d end an episode when the robot falls; a world model wants the dynamics after a fall
# too, so these factories make the v5 envs without that termination (``zoo_tasks.rl`` takes factories by path).
def hopper_v5() -> gym.Env:
    return gym.make("Hopper-v5", terminate_when_unhealthy=False)


def walker2d_v5() -> gym.Env:
    return gym.make("Walker2d-v5", terminate_when_unhealthy=False)


def reacher_v5() -> gym.Env:
    return gym.make("Reacher-v5", max_episode_steps=1000)  # its registered limit is 50 steps


_M = "zoo_tasks.worldmodel.robots"
ROBOTS: dict[str, Robot] = {
    r.name: r
    for r in (
        # pretraining set, in the order the scaling rows take prefixes of it (3 / 6 / 12)
        Robot("dmc_cheetah", "cheetah-run", 2, True),
        Robot("dmc_walker", "walker-walk", 2, True),
        Robot("dmc_hopper", "hopper-hop", 2, True),
        Robot("dmc_swimmer6", "swimmer-swimmer6", 2, True),
        Robot("dmc_cartpole", "cartpole-swingup", 2, False),
        Robot("dmc_acrobot", "acrobot-swingup", 2, False),
        Robot("dmc_reacher", "reacher-easy", 2, False),
        Robot("dmc_finger", "finger-spin", 2, False),
        Robot("gym_swimmer", "gym:Swimmer-v5", 1, True),
        Robot("gym_reacher", f"{_M}:reacher_v5", 1, False),
        Robot("dmc_pendulum", "pendulum-swingup", 2, False),
        Robot("dmc_ball_in_cup", "ball_in_cup-catch", 2, False),
        # held out: zero-shot (gymnasium Walker2d and Hopper) and few-shot (gymnasium HalfCheetah)
        Robot("gym_walker2d", f"{_M}:walker2d_v5", 1, True),
        Robot("gym_hopper", f"{_M}:hopper_v5", 1, True),
        Robot("gym_half_cheetah", "gym:HalfCheetah-v5", 1, True),
    )
}
PRETRAIN = tuple(list(ROBOTS)[:12])
ZERO_SHOT = ("gym_walker2d", "gym_hopper")
FEW_SHOT = "gym_half_cheetah"


def robot(name: str, key: str = "robot") -> Robot:
    """The `Robot` called ``name``; ConfigError naming ``key`` and the choices otherwise."""
    if name not in ROBOTS:
        raise ConfigError(f"{key}: unknown robot {name!r}; valid: {', '.join(ROBOTS)}")
    return ROBOTS[name]


def make_robot_env(name: str, seed: int):
    """The `zoo_tasks.rl` env of robot ``name`` (actions in [-1, 1]) and its ``(MjModel, MjData)``."""
    from zoo_tasks.rl.envs import make_env

    spec = robot(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = make_env(spec.env, seed=seed, action_repeat=spec.action_repeat)
    inner = env._env  # the wrapped simulator: dm_control's Environment or a gymnasium.Env
    if hasattr(inner, "physics"):
        return env, lambda: (inner.physics.model.ptr, inner.physics.data.ptr)
    return env, lambda: (inner.unwrapped.model, inner.unwrapped.data)


@dataclass(frozen=True)
class RobotStructure:
    """A robot's kinematic tree and the body of every state / action token.

    bodies: body names (the world body excluded); parents: parent index per body (-1 for the world);
    pre / mirror / post: pre-order, mirrored pre-order (children right to left) and post-order index of each body
    in the tree (the reference's per-body traversal indices); depth: tree depth (root bodies 0).
    obs_body (Do,) / act_body (Da,): body index of each obs / action dim; obs_kind (Do,): 0 qpos, 1 qvel;
    obs_names / act_names: "<joint>.<qpos|qvel>[i]" / actuator name; qpos_index (Do,): index into [qpos | qvel].
    """

    name: str
    bodies: tuple[str, ...]
    parents: tuple[int, ...]
    pre: tuple[int, ...]
    mirror: tuple[int, ...]
    post: tuple[int, ...]
    depth: tuple[int, ...]
    obs_body: tuple[int, ...]
    obs_kind: tuple[int, ...]
    obs_names: tuple[str, ...]
    state_index: tuple[int, ...]
    act_body: tuple[int, ...]
    act_names: tuple[str, ...]

    @property
    def obs_dim(self) -> int:
        return len(self.obs_body)

    @property
    def act_dim(self) -> int:
        return len(self.act_body)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RobotStructure:
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})

    def tree_distance(self) -> np.ndarray:
        """(n_bodies, n_bodies) number of edges between bodies in the kinematic tree (bodies under the world are
        joined through it)."""
        n = len(self.bodies)
        chains = []  # each body's path up to the world (-1), itself first
        for b in range(n):
            chain, cur = [b], b
            while cur >= 0:
                cur = self.parents[cur]
                chain.append(cur)
            chains.append(chain)
        dist = np.zeros((n, n), dtype=np.int64)
        for i in range(n):
            up_i = {b: k for k, b in enumerate(chains[i])}
            for j in range(n):
                k_j, b = next((k, b) for k, b in enumerate(chains[j]) if b in up_i)  # lowest common ancestor
                dist[i, j] = k_j + up_i[b]
        return dist


def _traversals(parents: list[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    n = len(parents)
    children: dict[int, list[int]] = {b: [] for b in range(-1, n)}
    for b, p in enumerate(parents):
        children[p].append(b)
    pre, mirror, post, depth = [0] * n, [0] * n, [0] * n, [0] * n
    counter = {"pre": 0, "mirror": 0, "post": 0}

    def walk(b: int, d: int, mirrored: bool) -> None:
        key = "mirror" if mirrored else "pre"
        (mirror if mirrored else pre)[b] = counter[key]
        counter[key] += 1
        depth[b] = d
        kids = children[b][::-1] if mirrored else children[b]
        for c in kids:
            walk(c, d + 1, mirrored)
        if not mirrored:
            post[b] = counter["post"]
            counter["post"] += 1

    for mirrored in (False, True):
        roots = children[-1][::-1] if mirrored else children[-1]
        for r in roots:
            walk(r, 0, mirrored)
    return pre, mirror, post, depth


def parse_structure(name: str, model, locomotion: bool) -> RobotStructure:
    """A `RobotStructure` from a ``mujoco.MjModel``: body tree, joints -> bodies, actuators -> joints -> bodies."""
    import mujoco

    bodies = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}" for b in range(1, model.nbody)]
    parents = [int(model.body_parentid[b]) - 1 for b in range(1, model.nbody)]  # world (0) -> -1
    pre, mirror, post, depth = _traversals(parents)
    free, ball, slide = mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL, mujoco.mjtJoint.mjJNT_SLIDE
    qpos_rows, qvel_rows = [], []  # (name, body, state index)
    for j in range(model.njnt):
        jname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"
        body = int(model.jnt_bodyid[j]) - 1
        kind = model.jnt_type[j]
        nq = 7 if kind == free else 4 if kind == ball else 1
        nv = 6 if kind == free else 3 if kind == ball else 1
        qadr, vadr = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
        drop: set[int] = set()
        root = parents[body] == -1
        if locomotion and root and kind == free:
            drop = {0, 1}
        if locomotion and root and kind == slide and max(abs(model.jnt_axis[j][0]), abs(model.jnt_axis[j][1])) > 0.9:
            drop = {0}
        for i in range(nq):
            if i not in drop:
                qpos_rows.append((f"{jname}.qpos{i if nq > 1 else ''}", body, qadr + i))
        for i in range(nv):
            qvel_rows.append((f"{jname}.qvel{i if nv > 1 else ''}", body, model.nq + vadr + i))
    act_body, act_names = [], []
    for a in range(model.nu):
        trn = int(model.actuator_trnid[a][0])
        joint_trn = model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        act_body.append(int(model.jnt_bodyid[trn]) - 1 if joint_trn and trn >= 0 else 0)
        act_names.append(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator{a}")
    rows = qpos_rows + qvel_rows
    return RobotStructure(
        name=name,
        bodies=tuple(bodies),
        parents=tuple(parents),
        pre=tuple(pre),
        mirror=tuple(mirror),
        post=tuple(post),
        depth=tuple(depth),
        obs_body=tuple(r[1] for r in rows),
        obs_kind=tuple([0] * len(qpos_rows) + [1] * len(qvel_rows)),
        obs_names=tuple(r[0] for r in rows),
        state_index=tuple(r[2] for r in rows),
        act_body=tuple(act_body),
        act_names=tuple(act_names),
    )


def robot_structure(name: str) -> RobotStructure:
    """Build robot ``name``'s env once and parse its MJCF structure."""
    env, handles = make_robot_env(name, seed=0)
    try:
        model, _ = handles()
        return parse_structure(name, model, robot(name).locomotion)
    finally:
        env.close()
