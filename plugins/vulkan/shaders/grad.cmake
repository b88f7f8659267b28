# Shader variants of the pointwise, row and index gradients: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
foreach(a ${float_dtypes})
  list(APPEND variants "grad_pointwise_${a}|grad_pointwise.comp|-DDT=${a}")
  list(APPEND variants "grad_rows_${a}|grad_rows.comp|-DDT=${a}")
  foreach(i 4 5)
    list(APPEND variants "grad_index_${a}_${i}|grad_index.comp|-DDT=${a},-DDTI=${i}")
  endforeach()
endforeach()
