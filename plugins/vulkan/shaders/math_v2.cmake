# Shader variants of the operator set v2 math operators: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
foreach(a 1 2 3 4 5 6)  # f16 bf16 f32 i32 i64 bool: the dtypes of these operators
  # clip, fmod, remainder, logical and bitwise operators (one dtype throughout).
  list(APPEND variants "math_v2_map_${a}|math_v2_map.comp|-DDT=${a}")
endforeach()
foreach(a 1 2 3 4 5)  # f16 bf16 f32 i32 i64
  # cumsum (OP 0) and cumprod (OP 1).
  list(APPEND variants "math_v2_scan_${a}|math_v2_scan.comp|-DDT=${a}")
endforeach()
foreach(a 1 2 3)  # f16 bf16 f32
  list(APPEND variants "math_v2_logsumexp_${a}|math_v2_logsumexp.comp|-DDT=${a}")
endforeach()
foreach(a 1 2 3 4 5)  # f16 bf16 f32 i32 i64
  # sort, argsort and topk: ranks within each row.
  list(APPEND variants "math_v2_rank_${a}|math_v2_rank.comp|-DDT=${a}")
endforeach()
