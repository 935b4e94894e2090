"""A block size vLLM refuses is refused here, on every path a scenario arrives by (a scenario
file or dict, `vllm serve` flags, the web), with vLLM's reason and the field at fault."""

import pytest

from scheduler_core.cli.main import main
from scheduler_core.errors import ConfigError
from scheduler_core.scenario.scenario import Scenario


def scenario(block_size: int, version: str = "0.33.0") -> Scenario:
    return Scenario.from_dict({"vllm_version": version, "engine": {"block_size": block_size, "num_gpu_blocks": 64},
                               "workload": {"num_requests": 2}})


@pytest.mark.parametrize("block_size", [7, 8, 1, 24])
def test_vllm_033_refuses_a_block_size_its_cuda_attention_backends_cannot_take(block_size):
    with pytest.raises(ConfigError) as refused:
        scenario(block_size)
    assert refused.value.field == "block_size" and "multiples of 16" in refused.value.reason


@pytest.mark.parametrize("block_size", [16, 32, 128, 544])
def test_vllm_033_takes_any_multiple_of_16(block_size):
    assert scenario(block_size).engine.block_size == block_size


def test_vllm_010_takes_the_literal_choices_only():
    assert scenario(8, "0.10.1.1").engine.block_size == 8
    with pytest.raises(ConfigError, match="invalid choice: 7"):
        scenario(7, "0.10.1.1")
    with pytest.raises(ConfigError, match="invalid choice: 256"):
        scenario(256, "0.11.0")
    assert scenario(256, "0.11.1").engine.block_size == 256


def test_the_cli_refuses_block_size_7_naming_the_field(capsys):
    assert main(["run", "--block-size", "7", "--num-requests", "2"]) != 0
    err = capsys.readouterr().err
    assert "block_size" in err and "Traceback" not in err
