# Shader variants of the gradients of the normalizations, conv2d, pooling and attention: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
foreach(a 1 2 3)
  list(APPEND variants "nn_grad_norm_${a}|nn_grad_norm.comp|-DDT=${a}")
  list(APPEND variants "nn_grad_pool_${a}|nn_grad_pool.comp|-DDT=${a}")
endforeach()
foreach(a 1 2 3)
  list(APPEND variants "nn_grad_conv_${a}|nn_grad_conv.comp|-DDT=${a}")
endforeach()
foreach(a 1 2 3)
  list(APPEND variants "nn_grad_attention_${a}|nn_grad_attention.comp|-DDT=${a}")
endforeach()
