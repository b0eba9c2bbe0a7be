module weft.test/tls_wrong_key_client

go 1.22
