# Defects of the gradient operators (core/ops/schema_grad.cc), each a realistic
# mistake in a backward kernel.
oar_add_defect(grad_gelu_ignores_approximate FILTER "ops/gelu_grad/f32/*"
               EXPECT not_certified AREA ops OPS gelu_grad DTYPE f32 ID_REGEX "tanh_form")
oar_add_defect(grad_sigmoid_reads_x FILTER "ops/sigmoid_grad/f32/*"
               EXPECT not_certified AREA ops OPS sigmoid_grad DTYPE f32)
# Caught by the finite differences alone: the filter leaves out every test
# that compares with the reference.
oar_add_defect(grad_silu_algebra_slip FILTER "ops/silu_grad/f64/gradcheck_finite_differences"
               EXPECT not_certified AREA ops OPS silu_grad DTYPE f64
               ID_REGEX "gradcheck_finite_differences")
oar_add_defect(grad_softmax_no_row_sum FILTER "ops/softmax_grad/f32/*"
               EXPECT not_certified AREA ops OPS softmax_grad DTYPE f32)
oar_add_defect(grad_embedding_scatter_overwrites FILTER "ops/embedding_grad/f32/*"
               EXPECT not_certified AREA ops OPS embedding_grad DTYPE f32 ID_REGEX "repeat")
oar_add_defect(grad_cross_entropy_mean_as_sum FILTER "ops/cross_entropy_grad/f32/*"
               EXPECT not_certified AREA ops OPS cross_entropy_grad DTYPE f32 ID_REGEX "mean")
