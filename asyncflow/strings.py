"""`af.strings`, as `tf.compat.v1.strings`: TF1's names for the string ops of asyncflow/ops/string_ops.py
(see _aliases.py); what asyncflow does not have yet (the RaggedTensor-valued and unicode_* functions)
is listed in NOT_YET."""

from asyncflow._aliases import bind

_OPS = "ops.string_ops."

__all__ = bind(globals(), """
    as_string bytes_split format join length lower ngrams reduce_join regex_full_match regex_replace split strip
    substr to_hash_bucket to_hash_bucket_fast to_hash_bucket_strong to_number unicode_decode
    unicode_decode_with_offsets unicode_encode unicode_script unicode_split unicode_split_with_offsets
    unicode_transcode unsorted_segment_join upper
""", {"as_string": _OPS + "as_string", "format": _OPS + "string_format", "join": _OPS + "string_join",
      "length": _OPS + "string_length", "lower": _OPS + "lower", "reduce_join": _OPS + "reduce_join",
      "regex_full_match": _OPS + "regex_full_match", "regex_replace": _OPS + "regex_replace",
      "split": _OPS + "strings_split", "strip": _OPS + "string_strip", "substr": _OPS + "substr",
      "to_hash_bucket_fast": _OPS + "string_to_hash_bucket_fast",
      "to_hash_bucket_strong": _OPS + "string_to_hash_bucket_strong", "to_number": _OPS + "string_to_number",
      "upper": _OPS + "upper"})
