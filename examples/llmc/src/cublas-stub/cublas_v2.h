// Declarations of the cuBLAS names llm.c's dev/cuda/common.h uses in its host code, for build
// hosts whose CUDA has no cuBLAS (PyPI's nvcc wheels). Searched after the toolkit's headers
// (`-isystem`), so a real cuBLAS wins where there is one; the kernels use none of it, and
// nothing is linked. Not part of llm.c.
#pragma once
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef struct cublasContext* cublasHandle_t;
cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
