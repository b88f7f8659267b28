# Shader variants of the fused optimizer steps and the gradient-norm clip: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
foreach(p 1 2 3)  # f16 bf16 f32 parameters, f32 state
  list(APPEND variants "optimizer_step_${p}|optimizer_step.comp|-DDT=${p}")
endforeach()
foreach(g 1 2 3)  # grad_norm and clip_grad_norm of f16 bf16 f32 gradients
  list(APPEND variants "optimizer_norm_${g}|optimizer_norm.comp|-DDT=${g}")
endforeach()
