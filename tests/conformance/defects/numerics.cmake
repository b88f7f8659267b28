# Numerics: wrong results, biased rounding, naive algorithms, ignored attributes.
oar_add_defect(kernel_off FILTER "ops/mul/f32/*" EXPECT not_certified AREA ops OPS "mul|add"
               DTYPE f32)
oar_add_defect(ignores_strides FILTER "ops/*/f32/noncontiguous*" EXPECT not_certified AREA ops
               ID_REGEX noncontiguous)
# fill writes 0 for INT32_MIN, INT64_MIN and i64 values near 2^63 (a range
# test open at the negative end): caught by fill's extreme-value cases.
oar_add_defect(fill_int_range_zeroed FILTER "ops/fill/i32/*,ops/fill/i64/*" EXPECT not_certified
               AREA ops OPS fill ID_REGEX "extreme_(min|max)")
# Rounding: every result within one ulp (inside the f16/bf16 tolerances) but
# biased, or off at the ties; caught by the bit-exact ties and the mean
# rounding error (conformance/suites/ops/numerics.cc).
oar_add_defect(f16_truncation FILTER "ops/add/f16/*,ops/exp/f16/*,ops/matmul/f16/*"
               EXPECT not_certified AREA ops DTYPE f16
               ID_REGEX "correctly_rounded|rounding_unbiased")
oar_add_defect(bf16_truncation FILTER "ops/mul/bf16/*,ops/softmax/bf16/*,ops/sum/bf16/*"
               EXPECT not_certified AREA ops DTYPE bf16
               ID_REGEX "correctly_rounded|rounding_unbiased")
oar_add_defect(bf16_round_half_away FILTER "ops/cast/f32/*" EXPECT not_certified AREA ops
               OPS cast ID_REGEX "to_bf16_correctly_rounded")
# The control: the same f32 detour rounding to nearest passes those checks.
oar_add_defect(f16_compute_in_f32
               FILTER "ops/add/f16/*,ops/exp/f16/*,ops/matmul/f16/*,ops/cast/f32/to_f16*"
               EXPECT clean)
# Subnormals: f16 must keep them (docs/ops.md); an absolute tolerance hides a flush.
oar_add_defect(f16_flush_subnormals
               FILTER "ops/mul/f16/correctly*,ops/exp/f16/near*,ops/neg/f16/*,ops/cast/f32/to_f16*"
               EXPECT not_certified AREA ops DTYPE f16
               ID_REGEX "correctly_rounded|near_underflow|subnormals_kept")
# Naive algorithms that are right on moderate inputs.
oar_add_defect(softmax_no_max_shift
               FILTER "ops/softmax/f32/*,ops/log_softmax/f32/*,ops/cross_entropy/f32/logits*"
               EXPECT not_certified AREA ops OPS "softmax|log_softmax|cross_entropy" DTYPE f32
               ID_REGEX "1000|30000")
oar_add_defect(layer_norm_one_pass FILTER "ops/layer_norm/*" EXPECT not_certified AREA ops
               OPS layer_norm DTYPE f32 ID_REGEX large_common_offset)
oar_add_defect(exp_overflows_early FILTER "ops/exp/*" EXPECT not_certified AREA ops OPS exp
               ID_REGEX "near_overflow|near_underflow")
# Long sums of one sign: an accumulator of the element type stops growing.
oar_add_defect(sum_half_accumulator FILTER "ops/sum/f16/*,ops/mean/bf16/*" EXPECT not_certified
               AREA ops OPS "sum|mean" ID_REGEX long_positive)
# ...and one running f32 accumulator drifts past the tolerance over 2^22 terms.
oar_add_defect(sum_f32_running_accumulator FILTER "ops/sum/f32/*,ops/mean/f32/*"
               EXPECT not_certified AREA ops OPS "sum|mean" DTYPE f32 ID_REGEX long_positive_4M)
# Attributes whose effect an ignored value hides only at small sizes.
oar_add_defect(norm_eps_ignored
               FILTER "ops/layer_norm/bf16/*,ops/rms_norm/bf16/*,ops/batch_norm/bf16/*"
               EXPECT not_certified AREA ops DTYPE bf16 ID_REGEX eps)
oar_add_defect(matmul_batch_transposed FILTER "ops/matmul/f32/*" EXPECT not_certified AREA ops
               OPS matmul DTYPE f32 ID_REGEX "transpose")
