"""A record names its CPU beyond the model name a virtual machine reports: instruction set and family / model."""

from zoo.leaderboard.cpu_identity import cpu_identity, record_machine
from zoo.runinfo import machine


def test_cpu_identity_reads_the_first_processor_and_torchs_kernel_isa(tmp_path):
    import torch

    cpuinfo = tmp_path / "cpuinfo"
    block = (
        "processor\t: {n}\nvendor_id\t: AuthenticAMD\ncpu family\t: {f}\nmodel\t\t: 17\n"
        "model name\t: AMD EPYC\nstepping\t: 1\n"
    )
    cpuinfo.write_text(block.format(n=0, f=25) + "\n" + block.format(n=1, f=99))
    info = cpu_identity(cpuinfo)
    assert info == {"cpu_isa": torch.backends.cpu.get_cpu_capability(), "cpu_id": "family 25 model 17 stepping 1"}
    assert "cpu_id" not in cpu_identity(tmp_path / "absent")  # not Linux: the key is left out, nothing raises


def test_a_records_machine_is_runinfos_machine_plus_the_cpu_identity():
    named = record_machine()
    assert named == {**machine(), **cpu_identity()}
    assert {"cpu", "cores", "torch_threads", "cpu_isa"} <= set(named)
