# Defect variants of the operator set v2 creation and layout operators
# (docs/ops.md, "Creation and layout, set v2").
# tril off by one on the diagonal: every case with elements on the band.
oar_add_defect(layout_v2_tril_strict FILTER "ops/tril/f32/*" EXPECT not_certified AREA ops
               OPS tril DTYPE f32 ID_REGEX "square_7x7|default_diagonal")
# x * mask: only a dropped NaN or infinity shows (finite values stay exact,
# up to the sign of zero).
oar_add_defect(layout_v2_tri_mask_multiply FILTER "ops/triu/f32/*,ops/tril/f32/*"
               EXPECT not_certified AREA ops OPS "tril|triu" DTYPE f32
               ID_REGEX "nan_and_inf_are_zeroed")
# PyTorch's flip(dims=[]) where OAR flips every axis.
oar_add_defect(layout_v2_flip_default_identity FILTER "ops/flip/*" EXPECT not_certified AREA ops
               OPS flip ID_REGEX "default_every_axis")
# Repeated indices in scatter: the first writer kept instead of the last, and
# scatter_add that adds to x instead of to the running sum.
oar_add_defect(layout_v2_scatter_first_wins FILTER "ops/scatter/f32/*" EXPECT not_certified
               AREA ops OPS scatter DTYPE f32 ID_REGEX "repeated_index_in_order")
oar_add_defect(layout_v2_scatter_add_race FILTER "ops/scatter_add/f32/*" EXPECT not_certified
               AREA ops OPS scatter_add DTYPE f32 ID_REGEX "repeated_index_in_order")
# Integer arange through f32: exact below 2^24 only.
oar_add_defect(layout_v2_arange_int_via_float FILTER "ops/arange/i32/*,ops/arange/i64/*"
               EXPECT not_certified AREA ops OPS arange ID_REGEX "beyond_f32_precision")
