# Shader variants of the fused optimizer steps and the gradient-norm clip: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
