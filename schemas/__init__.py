"""The event contracts every stage imports: record types, codecs, topics and dead letters.

JSON Schema files in ``schemas/json/`` are generated from the types in
:mod:`schemas.records` (``make schemas``) so producers in any language read the
same contract the Python decoders enforce.
"""
