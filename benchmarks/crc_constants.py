"""Derives the CRC-32 folding constants used in ext/overspill_crc.h.

K(n) = reflect64((x^n mod P(x)) << 32) << 1 for zlib's polynomial
P(x) = 0x104C11DB7.  Run it to check the header: every line must say True.
"""

POLYNOMIAL = 0x104C11DB7


def x_power_mod(n: int) -> int:
    remainder = 1
    for _ in range(n):
        remainder <<= 1
        if remainder >> 32:
            remainder ^= POLYNOMIAL
    return remainder


def reflect(value: int, bits: int) -> int:
    return int(format(value, f"0{bits}b")[::-1], 2)


def fold_constant(n: int) -> int:
    return reflect(x_power_mod(n) << 32, 64) << 1


HEADER = {480: 0x1C6E41596, 544: 0x154442BD4, 96: 0x0CCAA009E, 160: 0x1751997D0, 64: 0x163CD6124,
          2016: 0x1322D1430, 2080: 0x11542778A}

if __name__ == "__main__":
    for exponent, constant in HEADER.items():
        print(f"K({exponent}) = {fold_constant(exponent):#011x}  header {constant:#011x}  "
              f"{fold_constant(exponent) == constant}")
