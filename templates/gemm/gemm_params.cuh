// The GEMM template's parameters: every one arrives as an NVRTC -D option and none has a default,
// so a misspelled or missing one fails to compile (gemm.cu says what each means).
// Included first by gemm.cu.

#ifndef GEMV
#error "gemm.cu: GEMV must be defined (-DGEMV=<value>)"
#endif
#ifndef GCOLS
#error "gemm.cu: GCOLS must be defined (-DGCOLS=<value>)"
#endif
#ifndef KERNEL_NAME
#error "gemm.cu: KERNEL_NAME must be defined (-DKERNEL_NAME=<value>)"
#endif
#ifndef TRANS_A
#error "gemm.cu: TRANS_A must be defined (-DTRANS_A=<value>)"
#endif
#ifndef TRANS_B
#error "gemm.cu: TRANS_B must be defined (-DTRANS_B=<value>)"
#endif
#ifndef BM
#error "gemm.cu: BM must be defined (-DBM=<value>)"
#endif
#ifndef BN
#error "gemm.cu: BN must be defined (-DBN=<value>)"
#endif
#ifndef BK
#error "gemm.cu: BK must be defined (-DBK=<value>)"
#endif
#ifndef WM
#error "gemm.cu: WM must be defined (-DWM=<value>)"
#endif
#ifndef WN
#error "gemm.cu: WN must be defined (-DWN=<value>)"
#endif
#ifndef TM
#error "gemm.cu: TM must be defined (-DTM=<value>)"
#endif
#ifndef TN
#error "gemm.cu: TN must be defined (-DTN=<value>)"
#endif
#ifndef LM
#error "gemm.cu: LM must be defined (-DLM=<value>)"
#endif
#ifndef VEC
#error "gemm.cu: VEC must be defined (-DVEC=<value>)"
#endif
#ifndef PAD
#error "gemm.cu: PAD must be defined (-DPAD=<value>)"
#endif
#ifndef AKM
#error "gemm.cu: AKM must be defined (-DAKM=<value>)"
#endif
#ifndef UNROLL
#error "gemm.cu: UNROLL must be defined (-DUNROLL=<value>)"
#endif
#ifndef BKM
#error "gemm.cu: BKM must be defined (-DBKM=<value>)"
#endif
#ifndef PIPE
#error "gemm.cu: PIPE must be defined (-DPIPE=<value>)"
#endif
#ifndef SWZ
#error "gemm.cu: SWZ must be defined (-DSWZ=<value>)"
#endif
#ifndef MINB
#error "gemm.cu: MINB must be defined (-DMINB=<value>)"
#endif
#ifndef PRETB
#error "gemm.cu: PRETB must be defined (-DPRETB=<value>)"
#endif
#ifndef SPLITK
#error "gemm.cu: SPLITK must be defined (-DSPLITK=<value>)"
#endif
#ifndef TAIL
#error "gemm.cu: TAIL must be defined (-DTAIL=<value>)"
#endif
#ifndef C_VEC
#error "gemm.cu: C_VEC must be defined (-DC_VEC=<value>)"
#endif
#ifndef MMA
#error "gemm.cu: MMA must be defined (-DMMA=<value>)"
#endif
#ifndef A_STRIDE
#error "gemm.cu: A_STRIDE must be defined (-DA_STRIDE=<value>)"
#endif
#ifndef B_STRIDE
#error "gemm.cu: B_STRIDE must be defined (-DB_STRIDE=<value>)"
#endif
#ifndef CSTAGE
#error "gemm.cu: CSTAGE must be defined (-DCSTAGE=<value>)"
#endif
#ifndef KSUM
#error "gemm.cu: KSUM must be defined (-DKSUM=<value>)"
#endif
#ifndef AHEAD
#error "gemm.cu: AHEAD must be defined (-DAHEAD=<value>)"
#endif
#ifndef KSUM_CHAIN
#error "gemm.cu: KSUM_CHAIN must be defined (-DKSUM_CHAIN=<value>)"
#endif
#ifndef C_STRIDE
#error "gemm.cu: C_STRIDE must be defined (-DC_STRIDE=<value>)"
#endif
#ifndef BATCHED
#error "gemm.cu: BATCHED must be defined (-DBATCHED=<value>)"
#endif
#ifndef EPILOGUE
#error "gemm.cu: EPILOGUE must be defined (-DEPILOGUE=<value>)"
#endif
