"""`servescope serve --openai`'s command line: the same `vllm serve` arguments configure the served
engine, a bad one is an error line and not a traceback, and the trace it writes replays with `run`."""

import subprocess
import sys

import openai
import pytest

from app.cli import main
from app.openai.cli import served_options
from scheduler_core.cli.main import build_parser
from tests.app.openai_server import ServeProcess
from tests.paths import REPO


def options_of(*argv: str):
    from app.cli import add_app_commands

    return served_options(build_parser(add_app_commands).parse_args(["serve", "--openai", *argv]))


def test_the_vllm_line_configures_the_engine_and_names_the_model():
    options = options_of("--vllm", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 8 --max-model-len 2048")
    assert options.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    assert options.scenario.engine.max_num_seqs == 8 and options.scenario.engine.max_model_len == 2048


def test_served_model_name_and_engine_flags_win():
    options = options_of("--vllm", "vllm serve meta-llama/Llama-3.1-8B-Instruct", "--served-model-name", "tiny",
                         "--max-num-seqs", "4")
    assert options.model_name == "tiny" and options.scenario.engine.max_num_seqs == 4


def test_a_trace_in_a_missing_directory_is_an_error_line(capsys, tmp_path):
    assert main(["serve", "--openai", "--save-trace", str(tmp_path / "no" / "such" / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "servescope: error" in err and "Traceback" not in err


def test_a_tokenizer_file_needs_the_tokenizers_package_or_a_real_file(capsys, tmp_path):
    bogus = tmp_path / "tokenizer.json"
    bogus.write_text("{}")
    assert main(["serve", "--openai", "--tokenizer", str(bogus)]) == 2
    assert "tokenizer" in capsys.readouterr().err


@pytest.mark.slow
def test_a_served_process_writes_a_trace_that_run_replays(tmp_path):
    trace = tmp_path / "served.jsonl"
    server = ServeProcess(tmp_path / "log.txt", "--openai", "--save-trace", str(trace),
                          "--vllm", "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 16")
    try:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        for n in (5, 9):
            client.completions.create(model="meta-llama/Llama-3.1-8B-Instruct", prompt="hello " * n, max_tokens=n)
        assert "serving meta-llama/Llama-3.1-8B-Instruct" in server.read_log()
    finally:
        server.stop()
    assert len(trace.read_text().splitlines()) == 2
    replay = subprocess.run([sys.executable, "-m", "app.cli", "run", "--vllm",
                             "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 16", "--workload", str(trace)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0, replay.stderr
    assert "workload simulated: 2 requests" in replay.stdout


def test_a_tokenizer_file_counts_the_prompt_with_the_models_own_ids(tmp_path):
    """A tokenizer.json the operator names is read locally; prompts are its ids (built here with the
    `tokenizers` package itself, so no file is downloaded)."""
    import tokenizers  # the test extra installs it (pyproject.toml: servescope[tokenizer])
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    from app.openai.tokenizer_file import FileTokenizer

    tokenizer = tokenizers.Tokenizer(WordLevel({"[UNK]": 0, "paged": 5, "attention": 9}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))

    assert list(FileTokenizer(path).encode("paged attention rocks")) == [5, 9, 0]
    assert options_of("--tokenizer", str(path)).tokenizer.name == "tokenizer.json"
