# Defect variants of the narrow integer dtypes (i8, u8, i16): each must be
# refused, by a test of the operator and dtype it breaks.
oar_add_defect(dtypes_small_int_add_saturates FILTER "ops/add/i8/*" EXPECT not_certified
               AREA ops OPS add DTYPE i8)
oar_add_defect(dtypes_u8_ordered_as_i8 FILTER "ops/maximum/u8/*,ops/lt/u8/*" EXPECT not_certified
               AREA ops OPS "maximum|lt" DTYPE u8)
oar_add_defect(dtypes_w8_f16_accumulator FILTER "ops/matmul_w8/f16/*" EXPECT not_certified
               AREA ops OPS matmul_w8 DTYPE f16 ID_REGEX "large_k_16384_positive")
oar_add_defect(dtypes_cast_narrow_saturates FILTER "ops/cast/i32/to_i8*,ops/cast/i32/to_u8*"
               EXPECT not_certified AREA ops OPS cast DTYPE i32 ID_REGEX "_wraps$")
