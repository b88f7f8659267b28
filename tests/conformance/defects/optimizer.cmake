# Defects of the optimizer steps (core/ops/schema_optimizer.cc), each a
# realistic mistake in a fused optimizer kernel.
# Caught only by the in-place test: with separate outputs the two passes agree.
oar_add_defect(optimizer_adam_two_pass FILTER "ops/adam/f32/*,ops/adamw/f32/*"
               EXPECT not_certified AREA ops OPS "adamw?" DTYPE f32 ID_REGEX "in_place_3_steps")
oar_add_defect(optimizer_sgd_damped_first_step FILTER "ops/sgd/f32/*"
               EXPECT not_certified AREA ops OPS sgd DTYPE f32 ID_REGEX "first_step")
oar_add_defect(optimizer_adam_no_bias_correction FILTER "ops/adam/f32/*"
               EXPECT not_certified AREA ops OPS adam DTYPE f32 ID_REGEX "bias_corrected")
oar_add_defect(optimizer_grad_norm_first_tensor FILTER "ops/grad_norm/f32/*"
               EXPECT not_certified AREA ops OPS grad_norm DTYPE f32 ID_REGEX "tensors")
oar_add_defect(optimizer_clip_fmin_drops_nan FILTER "ops/clip_grad_norm/f32/*"
               EXPECT not_certified AREA ops OPS clip_grad_norm DTYPE f32 ID_REGEX "nan")
# The same two-pass kernel trains differently: the model suite's AdamW loop
# (optimizer steps in place) must see it too, with no operator test in the run.
add_test(NAME conformance_catches_optimizer_adam_two_pass_in_training
  COMMAND ${CMAKE_COMMAND}
    -DOAR_CONFORM=$<TARGET_FILE:oar_conform>
    -DPLUGIN=${OAR_DEFECT_MANIFEST_DIR}/cpu_defect_optimizer_adam_two_pass.json
    -DREPORT_DIR=${CMAKE_CURRENT_BINARY_DIR}/reports/optimizer_adam_two_pass_in_training
    "-DFILTER=models/train_block_adamw/f32"
    -DEXPECTATIONS=${OAR_DEFECT_EXPECTATIONS}
    -DEXPECT=not_certified -DAREA=models -DDTYPE=f32 -DID_REGEX=train_block_adamw
    "-DEXTRA_ARGS="
    -P ${CMAKE_CURRENT_SOURCE_DIR}/check_report.cmake)
set_tests_properties(conformance_catches_optimizer_adam_two_pass_in_training PROPERTIES
                     TIMEOUT 600 RESOURCE_LOCK oar_conformance_memory)
