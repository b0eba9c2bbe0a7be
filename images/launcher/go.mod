module weft.local/images/launcher

go 1.24.0
