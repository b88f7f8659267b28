# Defects of the gradients of the neural-network operators (core/ops/schema_nn_grad.cc) and of the
# v1 attention's causal_alignment, each a realistic mistake in a kernel.
oar_add_defect(nn_grad_max_pool_last_tie FILTER "ops/max_pool2d_grad/f32/*"
               EXPECT not_certified AREA ops OPS max_pool2d_grad DTYPE f32 ID_REGEX "ties_")
oar_add_defect(nn_grad_layer_norm_dx_ignores_weight FILTER "ops/layer_norm_grad/f32/r*"
               EXPECT not_certified AREA ops OPS layer_norm_grad DTYPE f32)
oar_add_defect(nn_grad_attention_ignores_alignment
               FILTER "ops/scaled_dot_product_attention/f32/*"
               EXPECT not_certified AREA ops OPS scaled_dot_product_attention DTYPE f32
               ID_REGEX "causal_top_left_(fewer|more)")
oar_add_defect(nn_grad_conv_input_ignores_dilation FILTER "ops/conv2d_grad_input/f32/dilation*"
               EXPECT not_certified AREA ops OPS conv2d_grad_input DTYPE f32 ID_REGEX "dilation2")
