"""``zoo predict RUN [--checkpoint best|last|FILE] [--out DIR] [--data.* / --model.* overrides] [predictor options]``:
load a trained run (:func:`zoo.trained.load_run`), predict with its task's predictor (:mod:`zoo.predict`) and write
the files into ``RUN/predictions/<stamp>`` (or ``--out``), printing where."""

from __future__ import annotations

import inspect
import time
from pathlib import Path

from zoo.errors import ConfigError

USAGE = (
    "usage: zoo predict RUN [--checkpoint best|last|FILE] [--out DIR] [--data.init_args.KEY VALUE ...] "
    "[--OPTION VALUE ...]\n"
    "  RUN: a run folder (runs/<config>/<stamp>) or a .ckpt inside one; --data.* / --model.* settings apply over\n"
    "  the run's saved config (e.g. --data.init_args.path my.csv: your own data, the same preprocessing);\n"
    "  the other options are the task's predictor's (zoo predict RUN --help lists them)."
)
OVERRIDE_PREFIXES = ("--data.", "--model.", "--trainer.", "--seed_everything")


def split_args(argv: list[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """``(own options, config overrides, predictor options)`` of ``argv`` after RUN."""
    own, overrides, options = {}, [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        takes_next = not eq and i + 1 < len(argv) and not argv[i + 1].startswith("--")
        if not eq and takes_next:
            value = argv[i + 1]
        if key in ("--checkpoint", "--out"):
            if not eq and not takes_next:
                raise ConfigError(f"{key} needs a value")
            own[key[2:]] = value
        elif key.startswith(OVERRIDE_PREFIXES):
            overrides.append(f"{key}={value}" if (eq or takes_next) else key)
        else:
            options.extend([key, value] if (eq or takes_next) else [key])
        i += 1 if eq or not takes_next else 2
    return own, overrides, options


def predictor_parser(predictor, prog: str = "zoo predict RUN"):
    """A jsonargparse parser of the predictor's keyword arguments (names, types, defaults, docstring)."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(prog=prog, exit_on_error=False, description=inspect.getdoc(predictor))
    parser.add_function_arguments(predictor, skip={"run"}, as_group=False, fail_untyped=False)
    return parser


def predictor_options(predictor, options: list[str]) -> dict:
    """``options`` parsed against the predictor's keyword arguments (jsonargparse reads names, types, defaults)."""
    flags = {
        f"--{name}" for name, p in inspect.signature(predictor).parameters.items() if p.annotation in (bool, "bool")
    }
    # a bool option given alone (`--last`) means true, as a flag does
    options = [
        part
        for i, arg in enumerate(options)
        for part in (
            [arg, "true"] if arg in flags and (i + 1 == len(options) or options[i + 1].startswith("--")) else [arg]
        )
    ]
    try:
        parsed = predictor_parser(predictor).parse_args(options)
    except Exception as exc:  # noqa: BLE001 - jsonargparse's ArgumentError: one line for the user
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise ConfigError(f"predictor options: {' '.join(lines[:3])}") from None
    return {k: v for k, v in parsed.as_dict().items() if k != "config"}


def predict_main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    from zoo.cli.quiet import quiet_third_party
    from zoo.predict import find_predictor, predict
    from zoo.trained import load_run, resolve_run, saved_model_class

    quiet_third_party()
    own, overrides, options = split_args(argv[1:])
    _, _, config_file = resolve_run(argv[0], own.get("checkpoint", "best"))
    predictor = find_predictor(saved_model_class(config_file))
    if "--help" in options or "-h" in options:
        predictor_parser(predictor, prog=f"zoo predict {argv[0]}").print_help()
        return 0
    kwargs = predictor_options(predictor, options)  # a wrong option is refused before the model is loaded
    run = load_run(argv[0], own.get("checkpoint", "best"), overrides)
    prediction = predict(run, **kwargs)
    out = Path(own["out"]) if "out" in own else run.run_dir / "predictions" / time.strftime("%Y%m%d-%H%M%S")
    files = prediction.save(out)
    print(f"zoo: predicted with {run.checkpoint or 'a model that trains nothing (no checkpoint)'}")
    for line in prediction.summary:
        print(f"  {line}")
    print(f"zoo: wrote {len(files)} files to {out}:")
    for path in files:
        print(f"  {path.name}")
    return 0
