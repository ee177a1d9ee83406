"""Kernel cache entries (compiler/cache.py) and the artifact records (compiler/artifact.py) as a
warm launch reads them (issue 19): marshal metadata behind a checksum, hand-written frozen
records that behave as the dataclasses they replace."""

from __future__ import annotations

import marshal
import pickle

import pytest

from cthreads.compiler import cache
from cthreads.compiler.artifact import CompiledKernel, PushField, PushLayout
from cthreads.compiler.ir_types import F32, I32, ListType, Param


def _kernel(**changes) -> CompiledKernel:
    fields = (PushField("total", None, 0, "I"), PushField("addr", 1, 8, "Q"))
    args = dict(
        name="k",
        spirv=b"\x03\x02\x23\x07" + bytes(16),
        params=(Param("n", I32), Param("x", ListType(F32), True, False)),
        push=PushLayout(fields, 16),
        workgroup_size=(64, 1, 1),
        observes_workgroup=False,
        cache_key="ab" * 16,
    )
    args.update(changes)
    return CompiledKernel(**args)


def test_round_trip():
    k = _kernel(ir_text="ir", elements_per_invocation=4)
    assert cache.decode(cache.encode(k), k.cache_key) == k
    assert cache.encode(k)[:4] == b"CTK4"


def test_an_older_format_is_a_miss(tmp_path):
    c = cache.KernelCache(tmp_path)
    k = _kernel()
    c.put(k.cache_key, k)
    path = tmp_path / f"{k.cache_key}.ctk"
    path.write_bytes(b"CTK2" + path.read_bytes()[4:])
    assert cache.KernelCache(tmp_path).get(k.cache_key) is None
    assert not path.exists()  # removed, to be rebuilt cleanly


@pytest.mark.parametrize("meta", [[1, 2], b"\x00not marshal"], ids=["not-a-dict", "garbage"])
def test_bad_metadata_behind_a_good_checksum_is_a_miss(tmp_path, meta):
    blob = marshal.dumps(meta) if isinstance(meta, list) else meta
    body = len(blob).to_bytes(4, "little") + blob
    data = b"CTK4" + cache.key_hash(body).digest()[:32] + body
    key = "cd" * 16
    (tmp_path / f"{key}.ctk").write_bytes(data)
    with pytest.raises((ValueError, EOFError, TypeError)):
        cache.decode(data, key)
    assert cache.KernelCache(tmp_path).get(key) is None


def test_cache_key_digest_is_sha512():
    import hashlib

    assert cache.key_hash(b"abc").hexdigest() == hashlib.sha512(b"abc").hexdigest()


def test_records_behave_as_frozen_dataclasses():
    a, b = _kernel(), _kernel()
    assert a == b and hash(a) == hash(b) and a != _kernel(name="other")
    assert a.ir_text == "" and a.entry_point == "main" and a.elements_per_invocation == 1
    assert PushLayout((), 8).in_buffer is False and PushLayout((), 8, True).push_size == 8
    with pytest.raises(AttributeError):
        a.name = "x"
    with pytest.raises(AttributeError):
        del a.push
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(PushField("len", 0, 4, "I")) == "PushField(role='len', param=0, offset=4, fmt='I')"
    with pytest.raises(TypeError, match="missing argument `cache_key`"):
        CompiledKernel("k", b"", (), PushLayout((), 8), (1, 1, 1), False)
    with pytest.raises(TypeError):
        PushField("len", 0, 4, "I", role="addr")
    assert PushField("len", 0, 4, "I") != ("len", 0, 4, "I")


# Target.key() as it was when Target was a dataclass (asdict, sorted): a record must give the
# same text, or every kernel cache on disk would go cold with the change. (`vector_form` came
# later, in session 7: a new field changes every key once.)
DEFAULT_TARGET_KEY = (
    "atomic_float32_add=False,float16=False,float64=False,fused_fma=False,int16=False,"
    "int64=False,int64_atomics=False,matrix_shapes=(),max_push_constants_size=128,"
    "max_shared_memory=16384,max_workgroup_invocations=1024,max_workgroup_size=(1024, 1024, 64),"
    "min_subgroup_size=1,nan_inf_preserve=False,storage_16bit=False,storage_8bit=True,subgroup_arithmetic=False,"
    "subgroup_ballot=False,subgroup_basic=True,subgroup_extended_types=False,"
    "subgroup_shuffle=False,subgroup_size=32,subgroup_vote=False,vector_form=True"
)


def test_target_is_a_frozen_record_with_a_stable_key():
    from cthreads.compiler.target import Target, target_from_profile

    t = Target()
    assert t.key() == DEFAULT_TARGET_KEY and t.key() is t.key()  # made once
    assert Target(float64=True).key() == DEFAULT_TARGET_KEY.replace("float64=False", "float64=True")
    assert t == Target() and hash(t) == hash(Target()) and t != Target(float64=True)
    with pytest.raises(AttributeError):
        t.float64 = True
    copy = pickle.loads(pickle.dumps(Target(subgroup_size=64)))
    assert copy == Target(subgroup_size=64) and copy.key() == Target(subgroup_size=64).key()
    gpu = target_from_profile({"type": "discrete", "limits": {"subgroup_size": 32}})
    assert gpu.fused_fma and gpu.key() == DEFAULT_TARGET_KEY.replace(
        "fused_fma=False", "fused_fma=True"
    )
    with pytest.raises(TypeError):
        Target(float65=True)


def test_records_declared_by_annotations_behave_as_dataclasses():
    # the IR's node kinds declare their fields as annotations (ir.py), with defaults and
    # `field(...)` options, after those of their bases
    from cthreads.compiler import ir
    from cthreads.record import fields_of

    c = ir.Const(ir.I32, 3, exact=3.0)
    assert ir.Const._fields == ("type", "value", "exact")
    assert fields_of(ir.Const) == (
        ("type", "Scalar"),
        ("value", "int | float | bool"),
        ("exact", "int | float | None"),
    )
    assert ir.Const(ir.I32, 3) == c and hash(ir.Const(ir.I32, 3)) == hash(c)  # exact: not compared
    assert repr(c) == "Const(type=Scalar(kind='int', bits=32), value=3)"  # exact: not shown
    assert c.replace(value=4) == ir.Const(ir.I32, 4) and c.replace(value=4).exact == 3.0
    assert pickle.loads(pickle.dumps(c)).exact == 3.0
    k1, k2 = ir.Kernel("k", ()), ir.Kernel("k", ())
    assert k1.locals == {} and k1.locals is not k2.locals  # a factory default: one per record
    assert ir.Subgroup.__dict__.get("line") is None  # a `field(...)` leaves no class attribute
    with pytest.raises(AttributeError, match="frozen Const"):
        c.value = 5
    with pytest.raises(TypeError, match="missing argument `value`"):
        ir.Const(ir.I32)
    with pytest.raises(TypeError, match="has no field `valu`"):
        c.replace(valu=4)
