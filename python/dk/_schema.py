"""Schemas given to dk's writers as Delta schema strings (PROTOCOL.md "Schema Serialization").

``schema_string(obj)`` accepts a Delta schema JSON string, a Spark DDL column list
("a long, b string not null") or anything with ``__arrow_c_schema__`` (a pyarrow Schema,
a Polars/pyarrow table's schema...), converted type by type as delta-spark maps Arrow types.
"""
import json

from . import _dk


def _arrow_type(t):
    import pyarrow as pa
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t):
        return "byte"
    if pa.types.is_int16(t):
        return "short"
    if pa.types.is_int32(t):
        return "integer"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t) or pa.types.is_uint32(t) or \
            pa.types.is_uint64(t):
        raise _dk.UnsupportedFeature("unsigned integer type %s has no Delta type" % t)
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise _dk.UnsupportedFeature("decimal precision %d > 38" % t.precision)
        return "decimal(%d,%d)" % (t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or \
            pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_dictionary(t):
        return _arrow_type(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "elementType": _arrow_type(t.value_type),
                "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": _arrow_type(t.key_type),
                "valueType": _arrow_type(t.item_type),
                "valueContainsNull": t.item_field.nullable}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field(t.field(i)) for i in range(t.num_fields)]}
    raise _dk.UnsupportedFeature("Arrow type %s has no Delta type" % t)


def _field(f):
    return {"name": f.name, "type": _arrow_type(f.type), "nullable": f.nullable, "metadata": {}}


def schema_string(obj):
    if isinstance(obj, str):
        s = obj.strip()
        if s.startswith("{"):
            json.loads(s)
            return s
        return _dk.schema_from_ddl(s)
    if hasattr(obj, "__arrow_c_schema__"):
        import pyarrow as pa
        sch = pa.schema(obj)
        return json.dumps({"type": "struct", "fields": [_field(f) for f in sch]},
                          separators=(",", ":"))
    raise TypeError("schema must be a DDL string, a Delta schema JSON string or an Arrow schema")
