"""The stand-in tokenizer and EOS lengths of a served session: deterministic, prefix-preserving, bounded."""

from scheduler_core.workload.standin_eos import StandInEOS
from scheduler_core.workload.standin_tokenizer import FIRST_TEXT_ID, StandInTokenizer
from scheduler_core.workload.workload import VOCAB_SIZE, WorkloadConfig


def test_the_same_text_gives_the_same_ids_on_every_run():
    assert list(StandInTokenizer().encode("Paged attention, 2023!")) == list(StandInTokenizer().encode("Paged attention, 2023!"))


def test_words_digits_and_marks_are_pieces_and_long_words_are_cut_every_four_characters():
    """"Paged" is two pieces (Page, d), "attention" three, "2023" one, "," and "!" one each."""
    assert len(StandInTokenizer().encode("Paged attention, 2023!")) == 2 + 3 + 1 + 1 + 1


def test_text_that_starts_alike_gives_ids_that_start_alike():
    """So a shared system prompt hits the prefix cache, as with a real tokenizer."""
    tokenizer = StandInTokenizer()
    system = "You are a careful assistant. "
    a, b = tokenizer.encode(system + "What is KV?"), tokenizer.encode(system + "Why page?")
    shared = len(tokenizer.encode(system))
    assert list(a[:shared]) == list(b[:shared]) and a[shared:] != b[shared:]


def test_ids_stay_in_the_vocabulary_above_the_special_tokens():
    ids = StandInTokenizer().encode("any text at all: ünïcödé, 日本語, \ud800 and emoji 🙂")
    assert all(FIRST_TEXT_ID <= i < VOCAB_SIZE for i in ids)


def test_a_chat_is_laid_out_under_its_roles_and_opens_the_assistants_turn():
    text = StandInTokenizer().apply_chat_template([("system", "Be brief."), ("user", "Hi")])
    assert text == "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n"


def test_output_tokens_are_words_fixed_by_the_request_and_position():
    tokenizer = StandInTokenizer()
    words = [tokenizer.decode_token(tokenizer.output_token(3, p)) for p in range(5)]
    assert words == [tokenizer.decode_token(tokenizer.output_token(3, p)) for p in range(5)]
    assert all(word.startswith(" ") and word.strip().isprintable() for word in words)


def test_eos_lengths_come_from_the_seed_and_the_index():
    eos = StandInEOS(WorkloadConfig(seed=7))
    lengths = [eos.natural_length(i) for i in range(50)]
    assert lengths == [StandInEOS(WorkloadConfig(seed=7)).natural_length(i) for i in range(50)]
    assert lengths != [StandInEOS(WorkloadConfig(seed=8)).natural_length(i) for i in range(50)]
    assert len(set(lengths)) > 10 and min(lengths) >= 1


def test_eos_first_is_stop_max_tokens_first_is_length_and_ignore_eos_always_length():
    eos = StandInEOS(WorkloadConfig(lengths="fixed", output_len=20))
    assert eos.output_length(0, 100, ignore_eos=False) == (20, "stop")
    assert eos.output_length(0, 20, ignore_eos=False) == (20, "stop")
    assert eos.output_length(0, 5, ignore_eos=False) == (5, "length")
    assert eos.output_length(0, 100, ignore_eos=True) == (100, "length")
