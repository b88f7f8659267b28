# Math, set v2 (docs/ops.md): wrong kernels of clip, fmod/remainder and the
# logical operators, each caught by the case that states the rule it breaks.
# fmod as a - trunc(a / b) * b: caught where the quotient passes f32's precision.
oar_add_defect(math_v2_fmod_naive FILTER "ops/fmod/f32/*" EXPECT not_certified AREA ops
               OPS fmod DTYPE f32 ID_REGEX "large_quotients_exact")
# Integer remainder with C's sign: caught by the random signs of every same-shape case.
oar_add_defect(math_v2_remainder_c_sign FILTER "ops/remainder/i32/*" EXPECT not_certified
               AREA ops OPS remainder DTYPE i32 ID_REGEX "prime_13x31|zero_divisor")
# clip through fmax/fmin drops NaN: caught by the NaN case.
oar_add_defect(math_v2_clip_fmax FILTER "ops/clip/f32/*" EXPECT not_certified AREA ops OPS clip
               DTYPE f32 ID_REGEX "nan_inf")
# logical operators on the stored bytes: caught where a true byte is not 1.
oar_add_defect(math_v2_logical_bytes FILTER "ops/logical_*/bool/*" EXPECT not_certified AREA ops
               OPS "logical_and|logical_or|logical_xor" DTYPE bool
               ID_REGEX "nonzero_bytes_are_true")
# cumsum with a running f16 accumulator: caught where small terms follow a large one.
oar_add_defect(math_v2_cumsum_half_accumulator FILTER "ops/cumsum/f16/*" EXPECT not_certified
               AREA ops OPS cumsum DTYPE f16 ID_REGEX "long_rows|small_terms")
# logsumexp without the shift by the maximum: caught by the rows near +-1000.
oar_add_defect(math_v2_logsumexp_no_max_shift FILTER "ops/logsumexp/f32/*" EXPECT not_certified
               AREA ops OPS logsumexp DTYPE f32 ID_REGEX "1000")
# Descending sort as the reversed ascending one: ties in decreasing index order.
oar_add_defect(math_v2_sort_descending_reversed FILTER "ops/sort/i32/*" EXPECT not_certified
               AREA ops OPS sort DTYPE i32 ID_REGEX "ties")
