"""vLLM's prefix-cache block hashes, reproduced without pickle or cbor2.

The expected digests were computed with vLLM 0.33.0's own functions (`vllm.utils.hashing.sha256`
/ `sha256_cbor`, `kv_cache_utils.init_none_hash`, `hash_block_tokens`, `maybe_convert_block_hash`)
in the recorder's venv, PYTHONHASHSEED unset and then "0":

    init_none_hash(fn); parent = None
    for i in range(3): parent = hash_block_tokens(fn, parent, [7] * 4 + list(range(100000 + 12 * i, 100012 + 12 * i)))
    hash_block_tokens(fn, None, list(range(16)), (None, 16))   # a lookahead hash (EAGLE, 0.33)
"""

import pickle

import pytest

from scheduler_core.engine.vllm_block_hash import VllmBlockHasher, cbor, external_block_hash, pickled

BLOCKS = [[7] * 4 + list(range(100000 + 12 * i, 100012 + 12 * i)) for i in range(3)]
# (algo, seed) -> (the first 8 bytes of NONE_HASH, the three chained blocks, the lookahead block), as events carry them.
VLLM_HASHES = {
    ("sha256", "vllm-none-hash"): ("066b1e8987e02713", [3591174072286172448, 1529899218411503374, 11719094004615687987],
                                   6094383954269735186),
    ("sha256_cbor", "vllm-none-hash"): ("9bd96a485ad84efd", [15327900485397879002, 10639461902248989611,
                                                             13866680126416397612], 3578291639258690068),
    ("sha256", "0"): ("1973e23848344dc4", [17421228221305812686, 17662952620751745241, 9008567544220839706],
                      1720892915967318181),
    ("sha256_cbor", "0"): ("4e1195df020de59e", [4854069438528168712, 17567406432967945638, 15918735628408838815],
                           11654555759536999577),
}


@pytest.mark.parametrize("algo, seed", list(VLLM_HASHES))
def test_chained_block_hashes_equal_vllms(algo, seed):
    none_hash, chained, lookahead = VLLM_HASHES[algo, seed]
    hasher = VllmBlockHasher(algo, seed)
    assert hasher.none_hash.hex()[:16] == none_hash
    parent, got = None, []
    for tokens in BLOCKS:
        parent = hasher.hash_block_tokens(parent, tokens)
        got.append(external_block_hash(parent))
    assert got == chained
    assert external_block_hash(hasher.hash_block_tokens(None, range(16), (None, 16))) == lookahead


VALUES = [None, "vllm-none-hash", "é" * 200, b"\x00" * 32, b"x" * 300, (), (1,), (1, 2), (1, 2, 3), tuple(range(16)),
          (b"\x01" * 32, (0, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**40, -1, -2**31, -2**31 - 1, -2**63, 2**70), None),
          (b"\x02" * 32, tuple(range(4096)), (None, 7)), (None, 1, 2, 3)]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_pickle_bytes_are_pickles_own(value):
    assert pickled(value) == pickle.dumps(value, protocol=5)


def test_canonical_cbor_of_a_blocks_tuple():
    # RFC 8949 appendix A's examples, then the shape vLLM hashes.
    assert cbor(0) == b"\x00" and cbor(23) == b"\x17" and cbor(24) == b"\x18\x18" and cbor(1000) == b"\x19\x03\xe8"
    assert cbor(-1) == b"\x20" and cbor(-1000) == b"\x39\x03\xe7" and cbor(None) == b"\xf6"
    assert cbor(2**32) == b"\x1b\x00\x00\x00\x01\x00\x00\x00\x00"
    assert cbor((b"\x01", (1, 2), None)) == b"\x83\x41\x01\x82\x01\x02\xf6"
    assert cbor("a") == b"\x61a"


def test_an_unknown_algorithm_is_refused():
    with pytest.raises(ValueError, match="prefix_caching_hash_algo"):
        VllmBlockHasher("xxhash")


def test_events_can_carry_the_digest_itself():
    digest = VllmBlockHasher().hash_block_tokens(None, BLOCKS[0])
    assert external_block_hash(digest, as_int=False) == digest
    assert external_block_hash(digest) == int.from_bytes(digest[-8:], "big")
