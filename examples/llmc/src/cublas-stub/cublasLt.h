// See cublas_v2.h beside this file: the cuBLASLt names llm.c's common.h uses. Not part of llm.c.
#pragma once
#include <cublas_v2.h>
typedef struct cublasLtContext* cublasLtHandle_t;
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle);
