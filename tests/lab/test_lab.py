"""The lab's grader: every exercise passes with its reference solution (tests/lab/solutions/, never in the
package), and each typical mistake fails at the right step with the right words."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from scheduler_core.cli.main import main
from scheduler_core.lab import student
from scheduler_core.lab.exercises import EXERCISES, exercise
from scheduler_core.lab.grader import check
from scheduler_core.lab.student import LabFileError, load_student

HERE = Path(__file__).parent
SOLUTIONS = {1: "ex1_static", 2: "ex2_continuous", 3: "ex3_chunked", 4: "ex4_preemption", 5: "ex5_priority"}


def run_check(name: str, number: int):
    return check(exercise(number), load_student(str(HERE / f"{name}.py")))


@pytest.mark.parametrize("number", sorted(SOLUTIONS))
def test_each_exercise_passes_with_its_reference_solution(number):
    result = run_check(f"solutions/{SOLUTIONS[number]}", number)
    assert result.passed, result.divergence and result.divergence.message
    assert [w.name for w in result.workloads] == [w.name for w in EXERCISES[number - 1].workloads]


def test_the_preemption_solution_also_passes_the_chunked_exercise_but_not_priority():
    assert run_check("solutions/ex4_preemption", 3).passed
    divergence = run_check("solutions/ex4_preemption", 5).divergence
    assert (divergence.step, divergence.kind) == (124, "diverged")
    assert "the largest (priority, arrival)" in divergence.message and divergence.message.endswith("req-7")


def test_prefill_before_decodes_fails_where_the_running_request_is_left_out():
    d = run_check("mistakes/prefill_first", 3).divergence
    assert (d.workload, d.step, d.kind) == ("long-prompts", 2, "diverged")
    assert d.message == ("step 2: you gave req-7 and req-2 256 tokens before the running requests' chunks; "
                         "vLLM schedules running requests first, so req-4 gets its tokens first")
    assert d.reference.tokens() == {"req-4": 23, "req-7": 172, "req-2": 61}
    assert d.yours.tokens() == {"req-7": 172, "req-2": 84}


def test_no_preemption_fails_at_the_first_step_blocks_run_out():
    d = run_check("mistakes/no_preemption", 4).divergence
    assert (d.workload, d.step, d.kind) == ("tight", 25, "diverged")
    assert d.message.startswith("step 25: you preempted nobody, but req-5 needed 1 more KV block for its next 1 token "
                                "and 0 were free; vLLM preempts the newest running request")
    assert d.message.endswith("so req-1 is preempted in this step")
    assert d.reference.preempted == ("req-1",) and d.yours.preempted == ()


def test_the_wrong_victim_is_named_beside_the_newest():
    d = run_check("mistakes/biggest_victim", 4).divergence
    assert (d.step, d.kind) == (92, "diverged")
    assert "you preempted req-7; vLLM preempts the newest (the last in view.running) first" in d.message
    assert d.message.endswith("req-3")


def test_ignoring_the_budget_is_an_impossible_batch_over_the_budget():
    d = run_check("mistakes/ignores_budget", 3).divergence
    assert (d.step, d.kind) == (1, "invalid")
    assert d.message == "step 1: the batch holds 451 tokens, over the 256-token budget (max_num_batched_tokens)"


def test_admitting_past_max_num_seqs_names_the_limit():
    d = run_check("mistakes/past_max_num_seqs", 2).divergence
    assert (d.step, d.kind) == (1, "invalid")
    assert d.message.endswith("makes 9 requests running, past max_num_seqs=4")


def test_static_batching_in_the_continuous_exercise_fails_at_the_first_free_seat():
    d = run_check("solutions/ex1_static", 2).divergence
    assert (d.workload, d.step) == ("burst", 23)
    assert "vLLM admits req-4 in this step (with 51 tokens): continuous batching fills a free seat at once" in d.message


def test_a_partial_static_batch_is_told_what_static_batching_admits(tmp_path):
    path = tmp_path / "one.py"
    path.write_text(textwrap.dedent("""
        class StudentScheduler:
            def schedule(self, view):
                if view.running:
                    return {r.request_id: 1 for r in view.running}
                return {view.waiting[0].request_id: view.waiting[0].num_remaining_tokens}
    """))
    d = check(exercise(1), load_student(str(path))).divergence
    assert d.message.startswith("step 1: static batching admits req-1, req-2 and req-3 in this step")


def write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "policy.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


@pytest.mark.parametrize("body, words", [
    ("return {'req-99': 1}", "'req-99' is neither running nor waiting"),
    ("return [(r.request_id, 1) for r in view.waiting[:1]] * 2", "appears twice in the batch"),
    ("return {r.request_id: 0 for r in view.waiting[:1]}", "give each request in the batch a whole number of tokens"),
    ("return {r.request_id: r.num_remaining_tokens + 1 for r in view.waiting[:1]}", "tokens left to compute; you gave it"),
    ("return 7", "which is not a dict or a list"),
    ("return {}, ['req-0']", "only running requests can be preempted"),
])
def test_an_impossible_batch_says_what_is_wrong(tmp_path, body, words):
    path = write(tmp_path, f"""
        class StudentScheduler:
            def schedule(self, view):
                {body}
    """)
    d = check(exercise(3), load_student(path)).divergence
    assert d.kind == "invalid" and words in d.message, d.message


def test_a_finished_request_cannot_be_scheduled(tmp_path):
    path = write(tmp_path, """
        class StudentScheduler:
            seen = {}
            def schedule(self, view):
                for r in view.running + view.waiting:
                    self.seen[r.request_id] = r
                gone = [rid for rid in self.seen if rid not in {r.request_id for r in view.running + view.waiting}]
                if gone:
                    return {gone[0]: 1}
                budget, batch = view.token_budget, {}
                for r in view.running + view.waiting[:view.max_num_seqs - len(view.running)]:
                    n = min(r.num_remaining_tokens, budget)
                    if n:
                        batch[r.request_id] = n
                        budget -= n
                return batch
    """)
    d = check(exercise(3), load_student(path)).divergence
    assert d.kind == "invalid" and "neither running nor waiting (finished, or not arrived yet)" in d.message


def test_an_exception_is_reported_with_the_students_file_and_line():
    with pytest.raises(LabFileError) as error:
        run_check("mistakes/broken", 1)
    assert error.value.where.endswith("mistakes/broken.py:9")
    assert error.value.message == "KeyError in schedule() at step 1: 'req-0'"
    assert error.value.source_line == "return batch[view.waiting[0].request_id]"


def test_a_loop_runs_into_the_time_budget(monkeypatch):
    monkeypatch.setattr(student, "STEP_TIME_BUDGET_S", 0.2)
    with pytest.raises(LabFileError) as error:
        run_check("mistakes/loops", 1)
    assert error.value.where.endswith("mistakes/loops.py:6")
    assert "ran past its time budget of 0.2 s at step 1" in error.value.message


def test_the_view_is_read_only():
    with pytest.raises(LabFileError) as error:
        run_check("mistakes/mutates_view", 1)
    assert "the view is read-only" in error.value.message and error.value.where.endswith("mutates_view.py:8")


def test_a_file_that_does_not_load_names_its_line(tmp_path):
    with pytest.raises(LabFileError) as error:
        load_student(write(tmp_path, "class StudentScheduler:\n    def schedule(self, view)\n        return {}\n"))
    assert error.value.where.endswith("policy.py:2") and error.value.message.startswith("SyntaxError")
    with pytest.raises(LabFileError, match="defines no class StudentScheduler"):
        load_student(write(tmp_path, "class Mine:\n    pass\n"))
    with pytest.raises(LabFileError, match="ZeroDivisionError while loading"):
        load_student(write(tmp_path, "x = 1 / 0\n"))


def test_the_workloads_are_the_same_every_time():
    for ex in EXERCISES:
        for spec in ex.workloads:
            a, b = spec.build().requests, spec.build().requests
            assert [(r.request_id, r.arrival_time, len(r.prompt_token_ids), r.max_tokens, r.priority) for r in a] == \
                   [(r.request_id, r.arrival_time, len(r.prompt_token_ids), r.max_tokens, r.priority) for r in b]


def test_lab_new_writes_the_starter_and_refuses_a_non_empty_directory(tmp_path, capsys):
    target = tmp_path / "lab"
    assert main(["lab", "new", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "my_scheduler.py"]
    readme = (target / "README.md").read_text()
    assert all(f"## {ex.number}. {ex.title}" in readme for ex in EXERCISES)
    capsys.readouterr()
    assert main(["lab", "new", str(target)]) == 2
    assert "is not an empty directory" in capsys.readouterr().err
    # The starter loads and runs: it schedules nothing, so it diverges at step 1.
    assert main(["lab", "check", str(target / "my_scheduler.py")]) == 1


def test_lab_check_exit_codes_and_json(capsys):
    assert main(["lab", "check", str(HERE / "solutions/ex3_chunked.py"), "--exercise", "3"]) == 0
    assert "passed" in capsys.readouterr().out
    assert main(["lab", "check", str(HERE / "mistakes/no_preemption.py"), "--exercise", "4", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False and result["divergence"]["step"] == 25
    assert result["divergence"]["reference"]["preempted"] == ["req-1"]
    assert main(["lab", "check", str(HERE / "mistakes/broken.py")]) == 2
    err = capsys.readouterr().err
    assert "broken.py:9: KeyError" in err and "Traceback" not in err
    assert main(["lab", "check", str(HERE / "mistakes/broken.py"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["where"].endswith("broken.py:9")


def test_the_report_puts_the_two_batches_side_by_side(capsys):
    assert main(["lab", "check", str(HERE / "mistakes/prefill_first.py"), "--exercise", "3"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "exercise 3, A token budget with chunked prefill: diverged on workload long-prompts"
    assert out[3].split() == ["step", "2", "yours", "vLLM"]
    assert out[4].split() == ["req-4", "-", "23", "prefill"]
    assert out[-1].split() == ["preempted", "-", "-"]


def test_exit_in_the_students_code_is_reported_not_obeyed(tmp_path):
    path = write(tmp_path, """
        import sys
        class StudentScheduler:
            def schedule(self, view):
                sys.exit("done")
    """)
    with pytest.raises(LabFileError, match="SystemExit in schedule\\(\\) at step 1: done"):
        check(exercise(1), load_student(path))


def test_a_dataclass_in_the_students_file_loads(tmp_path):
    path = write(tmp_path, """
        from dataclasses import dataclass

        @dataclass
        class Seat:
            request_id: str

        class StudentScheduler:
            def schedule(self, view):
                return {}
    """)
    assert check(exercise(1), load_student(path)).divergence.step == 1


def test_the_time_budget_holds_off_the_main_thread(monkeypatch):
    """Where no signal can be delivered (a check run from a worker thread) a trace function keeps the budget."""
    import threading
    monkeypatch.setattr(student, "STEP_TIME_BUDGET_S", 0.2)
    errors = []

    def run():
        try:
            run_check("mistakes/loops", 1)
        except LabFileError as e:
            errors.append(e)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and "ran past its time budget" in errors[0].message


@pytest.mark.parametrize("name, number, workload, step, words", [
    ("admits_after_preempting", 4, "tight", 25,
     "step 25: you admitted req-6, but vLLM does not admit it in this step: a step that preempted admits nobody"),
    ("chunk_gate", 4, "long-prompts", 7,
     "step 7: you admitted req-0, but vLLM does not admit it in this step: its whole context needs 29 blocks and 24 are "
     "free, and vLLM admits a request only if the free blocks hold its whole context"),
    ("skips_the_head", 4, "tight", 26,
     "step 26: you admitted req-6, but vLLM stops at the head of the waiting queue, req-1, which cannot be admitted"),
    ("whole_prompts_only", 3, "long-prompts", 1,
     "step 1: vLLM admits req-4 in this step with a 256-token chunk of the 279 tokens it has to compute"),
])
def test_admission_mistakes_are_told_the_rule_they_broke(name, number, workload, step, words):
    d = run_check(f"mistakes/{name}", number).divergence
    assert (d.workload, d.step, d.kind) == (workload, step, "diverged")
    assert d.message.startswith(words), d.message


def test_the_issues_example_reads_as_the_issue_wrote_it():
    from scheduler_core.lab.explain import explain
    from scheduler_core.lab.grader import Batch, Chunk
    from scheduler_core.lab.view import EngineView, RequestView

    def request(rid, prompt, output, computed):
        return RequestView(rid, prompt, output, 64, computed, 4, 0, 0, 0)
    view = EngineView(14, (request("req-7", 40, 3, 42), request("req-9", 30, 5, 34)), (request("req-3", 600, 0, 0),),
                      100, 16, 512, 8, True, "fcfs")
    yours = Batch((Chunk("req-3", 512, "prefill"),), ())
    reference = Batch((Chunk("req-7", 1, "decode"), Chunk("req-9", 1, "decode"), Chunk("req-3", 510, "prefill")), ())
    assert explain(exercise(3), 14, view, yours, reference, {}) == (
        "step 14: you gave req-3 a 512-token chunk before the running requests' decodes; vLLM schedules running "
        "requests first, so req-7 and req-9 decode in this step")
