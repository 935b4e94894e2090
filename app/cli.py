"""The `servescope` command: the headless commands of scheduler_core plus `serve`, and Ray for `sweep`."""

from __future__ import annotations

import argparse
import sys

from scheduler_core.cli.main import build_parser
from scheduler_core.cli.main import main as core_main
from scheduler_core.errors import ConfigError

from .kv_events_cli import add_kv_events_flag, open_kv_event_publishers
from .openai.cli import add_openai_flags
from .policy_file import add_policy_file_flags, attach_policy, policy_from_args
from .ray_sweep import run_ray


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .main import create_app, uvicorn_options
    from .settings import Settings

    settings = Settings.from_env(default_scenario=args.scenario, allowed_hosts=tuple(args.allowed_host) or None,
                                 public=args.public or None)
    policy = policy_from_args(args, settings.public)  # loaded before anything starts: a broken file is exit 2
    host = args.host or ("0.0.0.0" if args.public else "127.0.0.1")
    options = None
    if args.replicas != 1 and not args.openai:
        raise ConfigError("replicas", "--replicas N serves N engines on vLLM's OpenAI API: give --openai too")
    if args.openai:
        from .openai.cli import served_options
        from .session_limits import check_session_limits

        options = served_options(args)
        check_session_limits(options.scenario, settings)  # each replica is a session: the same bounds as any
    replicas = options.replicas if options else 1
    kv_event_publishers = open_kv_event_publishers(args, replicas)
    app = create_app(settings, kv_event_publishers[0] if kv_event_publishers else None)
    sockets = None
    if options:
        from .openai.replicas import bind_replica_sockets
        from .openai.serve import attach_openai

        options.kv_event_publishers = tuple(kv_event_publishers[1:])
        sockets = bind_replica_sockets(host, args.port, replicas) if replicas > 1 else None
        ports = [sock.getsockname()[1] for sock in sockets] if sockets else [args.port]
        attach_openai(app, options, ports if sockets else ())
        print_served(options, host, ports)
    print(f"servescope dashboard: http://{host}:{args.port}/", flush=True)
    if policy:
        attach_policy(app, policy, f"http://{host}:{args.port}")
    if args.public:
        print(f"public: any address of this machine, at most {settings.max_sessions_per_client} sessions per client, "
              f"idle sessions end after {settings.idle_timeout_s / 60:g} min", flush=True)
    if sockets:  # one server listening on every replica's port (the port says whose a request is)
        uvicorn.Server(uvicorn.Config(app, host=host, port=args.port, log_level=args.log_level,
                                      **uvicorn_options(settings))).run(sockets=sockets)
        return 0
    uvicorn.run(app, host=host, port=args.port, log_level=args.log_level, **uvicorn_options(settings))
    return 0


def print_served(options, host: str, ports: list[int]) -> None:
    scenario = options.scenario
    shape = f"{scenario.model} on {scenario.tensor_parallel_size} x {scenario.gpu}"
    if options.replicas == 1:
        print(f"servescope: serving {options.model_name} on vLLM's OpenAI API at http://{host}:{ports[0]}/v1 ({shape})"
              f"; on the dashboard: http://{host}:{ports[0]}/s/{options.session_id}/view", flush=True)
        return
    print(f"servescope: serving {options.model_name} on vLLM's OpenAI API: {options.replicas} replicas ({shape} each), "
          f"each its own server; live on the dashboard: http://{host}:{ports[0]}/fleet", flush=True)
    for replica, (port, session_id) in enumerate(zip(ports, options.session_ids)):
        print(f"  replica {replica}: http://{host}:{port}/v1 (its session: http://{host}:{ports[0]}/s/{session_id}/view)",
              flush=True)
    print(f"  or every replica on the first port: http://{host}:{ports[0]}/v1 with the header "
          f"X-data-parallel-rank: 0 to {options.replicas - 1}", flush=True)


def add_app_commands(commands, parsers: dict[str, argparse.ArgumentParser]) -> None:
    """What the `servescope` command adds to the core's: `serve`, and `sweep --ray`."""
    serve = commands.add_parser("serve", help="start the dashboard (the web app) on a local port")
    serve.add_argument("--host", default=None, help="bind address (default: loopback only; 0.0.0.0 with --public)")
    serve.add_argument("--public", action="store_true",
                       help="a classroom server: every interface, IP-address hosts allowed, per-client session quotas")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--scenario", default="default", help="scenario the dashboard opens on")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="also answer to this host name (repeatable; default: loopback names only)")
    serve.add_argument("--log-level", default="warning")
    add_kv_events_flag(serve)
    add_openai_flags(serve)
    add_policy_file_flags(serve)
    serve.set_defaults(func=cmd_serve)
    sweep = parsers["sweep"]
    sweep.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                       help="run the points as Ray tasks on the cluster at ADDRESS (none: a local Ray); needs servescope[ray]")
    sweep.set_defaults(ray_executor=run_ray)


def main(argv: list[str] | None = None) -> int:
    return core_main(argv, build_parser(add_app_commands))


if __name__ == "__main__":
    sys.exit(main())
