# Shader variants of the pointwise, row and index gradients: append entries
# "module-name|source.comp|-DDEFINE=value,..." to |variants|.
