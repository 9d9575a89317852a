"""The group constraint codes of the sparse kernel probit MIL models (Kueck 2004), named in one place.

A group's code says what the signs of its latent z must satisfy (``orthant_sampler.constraint_flags``) and, as a
label family, which label the program's ``group_label`` site reports (``zoo.models.mil``):
NEGATIVE every z < 0; MIXED at least one of each sign; POSITIVE every z > 0 (the thesis' three labels);
AT_LEAST_ONE at least one z > 0 (standard MIL bags); FREE no constraint (measurement-only groups).
"""
NEGATIVE, MIXED, POSITIVE, AT_LEAST_ONE, FREE = 0, 1, 2, 3, 4

#: codes that fix the sign of every z in the group (no sign pattern to draw)
PURE = (NEGATIVE, POSITIVE)

__all__ = ["NEGATIVE", "MIXED", "POSITIVE", "AT_LEAST_ONE", "FREE", "PURE"]
