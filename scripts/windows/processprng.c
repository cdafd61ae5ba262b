/*
 * bcryptprimitives.dll for Wine 8, which lacks it: Go 1.22 and later call
 * ProcessPrng from it for random numbers, and a Go program for Windows does
 * not start without it ("bcryptprimitives.dll not found"). Wine 9 ships
 * one. This stand-in fills the buffer through RtlGenRandom (advapi32's
 * SystemFunction036), Windows' own CSPRNG. Used only to run glmul's tests
 * and glmul.exe under Wine (scripts/windows.sh); never shipped.
 */
#include <windows.h>

BOOLEAN NTAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
	while (len > 0) {
		ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
		if (!SystemFunction036(data, n)) return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
