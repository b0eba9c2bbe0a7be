module weft.local/images/pause

go 1.24.0
