#include "textflag.h"

// func dot4x8(q, v *float32, stride, blocks int, acc *[4][8]float32)
//
// Four rows at a time, stride bytes apart from v, against q: lane j of row r's accumulator adds
// q[i+j]*row[i+j] for i = 0, 8, … (blocks times), the product rounded before the addition, as
// dot's accumulator sj does. The rows share each load of q, and their four accumulators do not
// wait on each other.
TEXT ·dot4x8(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), BX
	MOVQ blocks+24(FP), CX
	MOVQ acc+32(FP), DX
	LEAQ (DI)(BX*1), R8
	LEAQ (DI)(BX*2), R9
	LEAQ (R8)(BX*2), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	TESTQ  CX, CX
	JZ     done

loop:
	VMOVUPS (SI)(AX*1), Y4
	VMULPS  (DI)(AX*1), Y4, Y5
	VADDPS  Y5, Y0, Y0
	VMULPS  (R8)(AX*1), Y4, Y6
	VADDPS  Y6, Y1, Y1
	VMULPS  (R9)(AX*1), Y4, Y7
	VADDPS  Y7, Y2, Y2
	VMULPS  (R10)(AX*1), Y4, Y8
	VADDPS  Y8, Y3, Y3
	ADDQ    $32, AX
	DECQ    CX
	JNZ     loop

done:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VZEROUPPER
	RET

// func dot4i8(q *int16, v *int8, stride, blocks int, acc *[4][8]int32)
//
// Four rows of int8 codes, stride bytes apart from v, against the int16 codes q: each lane of
// row r's accumulator adds q[i]*row[i] + q[i+1]*row[i+1] for its pair of every 16 elements
// (blocks times). The sums are exact: quantizeQuery keeps them within int32.
TEXT ·dot4i8(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ stride+16(FP), BX
	MOVQ blocks+24(FP), CX
	MOVQ acc+32(FP), DX
	LEAQ (DI)(BX*1), R8
	LEAQ (DI)(BX*2), R9
	LEAQ (R8)(BX*2), R10
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  AX, AX
	TESTQ CX, CX
	JZ    donei8

loopi8:
	VMOVDQU   (SI)(AX*2), Y4
	VPMOVSXBW (DI)(AX*1), Y5
	VPMADDWD  Y4, Y5, Y5
	VPADDD    Y5, Y0, Y0
	VPMOVSXBW (R8)(AX*1), Y6
	VPMADDWD  Y4, Y6, Y6
	VPADDD    Y6, Y1, Y1
	VPMOVSXBW (R9)(AX*1), Y7
	VPMADDWD  Y4, Y7, Y7
	VPADDD    Y7, Y2, Y2
	VPMOVSXBW (R10)(AX*1), Y8
	VPMADDWD  Y4, Y8, Y8
	VPADDD    Y8, Y3, Y3
	ADDQ      $16, AX
	DECQ      CX
	JNZ       loopi8

donei8:
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VZEROUPPER
	RET
