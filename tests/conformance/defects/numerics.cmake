# Numerics: wrong results, biased rounding, naive algorithms, ignored attributes.
oar_add_defect(kernel_off FILTER "ops/mul/f32/*" EXPECT not_certified AREA ops OPS "mul|add"
               DTYPE f32)
oar_add_defect(ignores_strides FILTER "ops/*/f32/noncontiguous*" EXPECT not_certified AREA ops
               ID_REGEX noncontiguous)
