//! sprig's float arithmetic (`addf`, `subf`, `mulf`, `divf`) is shopspring/decimal's, not
//! float64's: each operand is taken at its shortest decimal form, added or multiplied exactly,
//! divided to 16 decimal places (half away from zero), and the result converted back to the
//! nearest float64. So `addf 0.1 0.2` is `0.3` and `divf 2 3` is `0.6666666666666667`, where
//! float64 arithmetic gives `0.30000000000000004` and `0.6666666666666666`.
//!
//! The few operations needed are written here over num-bigint (already in the build through the
//! certificate parser) rather than adding a decimal crate whose rounding would have to be
//! checked against shopspring's anyway.

use num_bigint::BigInt;
use num_traits::{Signed, Zero};

/// `m × 10^e`.
#[derive(Clone, Debug)]
pub struct Decimal {
    m: BigInt,
    e: i32,
}

/// shopspring's `DivisionPrecision`.
const DIVISION_PRECISION: i32 = 16;

impl Decimal {
    /// The float's shortest decimal form (shopspring's `NewFromFloat`); `None` for NaN and the
    /// infinities, which shopspring refuses.
    pub fn from_f64(f: f64) -> Option<Decimal> {
        if !f.is_finite() {
            return None;
        }
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i32);
        let m: BigInt = mantissa.replace('.', "").parse().ok()?;
        Some(Decimal {
            m,
            e: exp - fraction,
        })
    }

    /// The nearest float64.
    pub fn to_f64(&self) -> f64 {
        format!("{}e{}", self.m, self.e).parse().unwrap_or(f64::NAN)
    }

    /// Both at the smaller exponent.
    fn aligned(&self, other: &Decimal) -> (BigInt, BigInt, i32) {
        let e = self.e.min(other.e);
        let scale = |d: &Decimal| &d.m * BigInt::from(10).pow((d.e - e) as u32);
        (scale(self), scale(other), e)
    }

    pub fn add(&self, other: &Decimal) -> Decimal {
        let (a, b, e) = self.aligned(other);
        Decimal { m: a + b, e }
    }

    pub fn sub(&self, other: &Decimal) -> Decimal {
        let (a, b, e) = self.aligned(other);
        Decimal { m: a - b, e }
    }

    pub fn mul(&self, other: &Decimal) -> Decimal {
        Decimal {
            m: &self.m * &other.m,
            e: self.e + other.e,
        }
    }

    /// The quotient to 16 places, half away from zero; `None` dividing by zero (shopspring
    /// panics).
    pub fn div(&self, other: &Decimal) -> Option<Decimal> {
        if other.m.is_zero() {
            return None;
        }
        let k = self.e - other.e + DIVISION_PRECISION;
        let ten = BigInt::from(10);
        let (num, den) = if k >= 0 {
            (&self.m * ten.pow(k as u32), other.m.clone())
        } else {
            (self.m.clone(), &other.m * ten.pow((-k) as u32))
        };
        let mut q = &num / &den;
        let r = &num % &den;
        if r.abs() * 2 >= den.abs() {
            let away = if num.is_negative() != den.is_negative() {
                -1
            } else {
                1
            };
            q += away;
        }
        Some(Decimal {
            m: q,
            e: -DIVISION_PRECISION,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(f: f64) -> Decimal {
        Decimal::from_f64(f).unwrap()
    }

    #[test]
    fn arithmetic_is_shopspring_decimal() {
        assert_eq!(d(0.1).add(&d(0.2)).to_f64(), 0.3);
        assert_eq!(d(1.0).sub(&d(0.25)).to_f64(), 0.75);
        assert_eq!(d(0.1).mul(&d(3.0)).to_f64(), 0.3);
        assert_eq!(d(2.0).div(&d(3.0)).unwrap().to_f64(), 0.6666666666666667);
        assert_eq!(d(-2.0).div(&d(3.0)).unwrap().to_f64(), -0.6666666666666667);
        assert_eq!(d(2.0).div(&d(5432.0)).unwrap().to_f64(), 0.0003681885125184);
        assert_eq!(d(2.0).div(&d(12345678901.0)).unwrap().to_f64(), 1.62e-10);
        assert!(d(1.0).div(&d(0.0)).is_none());
    }
}
