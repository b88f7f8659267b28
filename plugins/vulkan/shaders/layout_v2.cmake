# Shader variants of the operator set v2 creation and layout operators: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
# flip and expand are strided copies through map.comp; tril/triu have a shader.
foreach(a ${all_dtypes})
  list(APPEND variants "layout_v2_triangle_${a}|layout_v2_triangle.comp|-DDT=${a}")
endforeach()
foreach(a ${all_dtypes})
  foreach(i 4 5)
    list(APPEND variants "layout_v2_one_hot_${a}_${i}|layout_v2_one_hot.comp|-DDT=${a},-DDTI=${i}")
  endforeach()
endforeach()
foreach(a ${all_dtypes})
  foreach(i 4 5)
    list(APPEND variants "layout_v2_scatter_${a}_${i}|layout_v2_scatter.comp|-DDT=${a},-DDTI=${i}")
  endforeach()
endforeach()
foreach(a ${number_dtypes})
  list(APPEND variants "layout_v2_arange_${a}|layout_v2_arange.comp|-DDT=${a}")
endforeach()
