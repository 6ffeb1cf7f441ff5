module github.com/vllmtop/vllmtop

go 1.26
